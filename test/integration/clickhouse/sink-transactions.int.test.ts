// The sink on a topic written in Kafka transactions (the scorer's verdicts): each transaction ends with a
// marker record that never reaches a consumer. The sink commits past it, so a caught-up sink's committed offset
// is the high watermark (lag 0, and it expedites as caught up) instead of stopping one short for ever.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { PartitionTransactions } from '../../../src/adapters/kafka/partition-transactions.js';
import { caughtUp, setupEnv, verdictMsg, type Env } from './fixtures.js';
import { createTopics, deleteTopics, services, uniqueName, waitFor } from '../setup/helpers.js';

describe('sink stage on a transactional topic (real Kafka + ClickHouse)', () => {
  let env: Env;
  beforeAll(async () => {
    env = await setupEnv('sink-tx', { partitions: 1 });
  });
  afterAll(async () => {
    await env?.close();
  });

  it('commits past transaction markers', async () => {
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-sink-tx' });
    const tx = new PartitionTransactions({ adapter, groupId: uniqueName('sink-tx-writer') });
    // The writer's own input, whose offsets its transactions commit.
    const input = uniqueName('sink-tx-in');
    await createTopics(services().kafkaBrokers, [input]);
    const sink = await env.startSink();
    try {
      // Two transactions, as two scorer chunks: 10 verdicts + a marker each.
      await tx.claim(input, 0);
      for (const part of [0, 10]) {
        const messages = Array.from({ length: 10 }, (_, i) => verdictMsg(part + i)).map((v) => ({ key: String(v.agent_id), value: JSON.stringify(v) }));
        await tx.commit(input, 0, [{ topic: env.topics.verdicts, messages }], String(part + 9), String(part));
      }
      await waitFor(async () => (await env.count('v_verdicts')).n >= 20, { timeoutMs: 30_000, message: 'verdict rows' });
      // 22 records on the partition: the sink's committed offset must reach 22, not stop at 21.
      await waitFor(() => caughtUp(`${env.prefix}-sink`, [env.topics.verdicts]), { timeoutMs: 20_000, message: 'sink committed past the last marker' });
      expect((await env.count('v_verdicts')).u).toBe(20);
    } finally {
      await sink.stop();
      await tx.disconnect();
      await deleteTopics(services().kafkaBrokers, [input]).catch(() => undefined);
    }
  }, 60_000);
});
