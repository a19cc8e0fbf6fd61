// SinkConsumerLoop on real Kafka (kafkajs seek and stale batches; no ClickHouse needed): a batch fails for
// good while the partition's next batch is already in flight behind it. The partition must be read again from
// the failed batch, not from the later one, or the records in between would be skipped and later committed past.
import { describe, expect, it } from 'vitest';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import type { SinkProcessor } from '../../../src/consumers/sink-processor.js';
import { SinkConsumerLoop } from '../../../src/consumers/sink-loop.js';
import { StewardError } from '../../../src/errors.js';
import { withPipelineEnv } from '../pipeline/harness.js';
import { waitFor, uniqueName } from '../setup/helpers.js';

describe('sink consumer loop on real Kafka', () => {
  it('a batch that fails with a later one in flight is read again from its own start; every record lands before its offset commits', async () => {
    await withPipelineEnv(
      'sl-seek',
      async ({ topics, adapter }) => {
        const topic = topics.decisions;
        const producer = await adapter.producer();
        // 10 sends of 10 records: one record batch each, and the consumer fetches about one at a time.
        for (let s = 0; s < 10; s++) {
          await producer.send([{ topic, messages: Array.from({ length: 10 }, (_, i) => ({ key: 'a', value: `{"n":${s * 10 + i}}` })) }]);
        }
        await producer.disconnect();
        const landed = new Set<number>();
        const calls: string[] = [];
        let failed = false;
        const proc = {
          async process(ms: InMessage[]) {
            const from = Number(ms[0].offset), to = Number(ms[ms.length - 1].offset);
            calls.push(`${from}-${to}`);
            if (!failed && from <= 20 && to >= 20) {
              failed = true;
              // Long enough for kafkajs to hand over the next batch, which then waits behind this one.
              await waitFor(() => calls.length >= 2, { timeoutMs: 10_000, message: 'next batch in flight' });
              throw new StewardError('STEWARD_SINK_RECORD', 'this batch fails for good (test)', { retryable: false });
            }
            for (const m of ms) landed.add(Number(m.offset));
            return false;
          },
        } as unknown as SinkProcessor;
        const consumer = adapter.consumer({ groupId: uniqueName('sl-seek'), maxWaitTimeMs: 100, maxBytesPerPartition: 1200 });
        const loop = new SinkConsumerLoop(proc, { commitIntervalMs: 50, seek: (t, p, o) => consumer.seek(t, p, o) });
        const commits: string[] = [];
        consumer.onGroupJoin(() => loop.onGroupJoin());
        await consumer.subscribe([topic], true);
        await consumer.runBatches((b, ctl) => loop.handler(b, { ...ctl, commitOffset: (o) => (commits.push(o), ctl.commitOffset!(o)) }), {
          partitionsConcurrently: 1,
          autoCommit: false,
        });
        try {
          await waitFor(() => commits.includes('99'), { timeoutMs: 30_000, message: 'offset 99 committed' });
          expect(failed).toBe(true);
          expect(calls.length).toBeGreaterThan(2);
          // Nothing skipped: every offset was processed successfully by the time 99 was committed.
          expect([...landed].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
          // Offset 20 was read twice: failed, then sought back to and landed.
          expect(calls.filter((c) => Number(c.split('-')[0]) <= 20 && Number(c.split('-')[1]) >= 20).length).toBeGreaterThanOrEqual(2);
          process.stderr.write(`[sink-loop seek] batches ${calls.join(' ')} commits ${commits.join(' ')}\n`);
        } finally {
          await consumer.stop();
          await consumer.disconnect();
        }
      },
      { topics: { partitions: 1 } },
    );
  }, 60_000);
});
