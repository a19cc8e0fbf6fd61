import { describe, expect, it } from 'vitest';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { cachingKeyPartitioner } from '../../../../src/adapters/kafka/client.js';

const meta = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, i) => ({ partitionId: i, leader: leaderless.includes(i) ? -1 : 0, replicas: [0], isr: [0], offlineReplicas: [], partitionErrorCode: 0 }));

describe('cachingKeyPartitioner', () => {
  it('picks the same partition as kafkajs DefaultPartitioner for keyed messages, cached or not', () => {
    const cached = cachingKeyPartitioner(50)();
    const plain = Partitioners.DefaultPartitioner();
    for (const n of [1, 3, 7, 12]) {
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 200; i++) {
          const args = { topic: 't', partitionMetadata: meta(n, n > 3 ? [1] : []), message: { key: `agent-${i}-é`, value: 'v' } };
          expect(cached(args)).toBe(plain(args));
        }
      }
    }
  });

  it('an explicit partition wins; keyless messages still spread over partitions', () => {
    const p = cachingKeyPartitioner()();
    expect(p({ topic: 't', partitionMetadata: meta(4), message: { key: 'a', value: 'v', partition: 3 } })).toBe(3);
    const seen = new Set(Array.from({ length: 20 }, () => p({ topic: 't', partitionMetadata: meta(4), message: { value: 'v' } })));
    expect(seen.size).toBeGreaterThan(1);
  });
});
