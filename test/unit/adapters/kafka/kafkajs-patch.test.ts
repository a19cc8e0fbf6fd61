// patches/kafkajs+2.2.4.patch (applied by `npm ci` through patch-package): kafkajs grouped a send's messages per
// partition by copying the partition's array for every message (O(n²) in a send of n messages).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const file = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
const group = require(file) as (a: { topic: string; partitionMetadata: unknown[]; messages: { key: string; i: number }[]; partitioner: (a: { message: { key: string } }) => number }) => Record<string, { i: number }[]>;

describe('kafkajs groupMessagesPerPartition (patched)', () => {
  it('is the patched, append-in-place version', () => {
    const src = readFileSync(file, 'utf8');
    expect(src).toContain('current.push(message)');
    expect(src).not.toContain('[...current, message]');
  });

  it('keeps each partition’s messages in send order, every message once', () => {
    const messages = Array.from({ length: 3000 }, (_, i) => ({ key: `a${i % 7}`, i }));
    const out = group({ topic: 't', partitionMetadata: [{}, {}, {}], messages, partitioner: ({ message }) => Number(message.key.slice(1)) % 3 });
    expect(Object.keys(out).sort()).toEqual(['0', '1', '2']);
    for (const [p, ms] of Object.entries(out)) {
      expect(ms.every((m) => (m.i % 7) % 3 === Number(p))).toBe(true);
      expect(ms.map((m) => m.i)).toEqual([...ms.map((m) => m.i)].sort((a, b) => a - b));
    }
    expect(Object.values(out).reduce((n, ms) => n + ms.length, 0)).toBe(3000);
    expect(group({ topic: 't', partitionMetadata: [], messages, partitioner: () => 0 })).toEqual({});
  });
});
