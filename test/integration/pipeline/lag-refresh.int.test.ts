// steward_consumer_lag of a partition whose chunk is stuck (one agent's traces each waiting on a slow engine) is
// read from the broker and grows as traces arrive; before, it was only set after a chunk finished, so a stalled
// partition had no lag series at all.
import { describe, expect, it } from 'vitest';
import { startPipeline } from '../../../src/process/pipeline.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { TestEngine, quietLogger, trace, withPipelineEnv } from './harness.js';
import { waitFor } from '../setup/helpers.js';

describe('consumer lag of a stalled partition (real Kafka)', () => {
  it('is reported and grows while the partition makes no progress', async () => {
    await withPipelineEnv(
      'pl-lag',
      async ({ cfg, topics, adapter }) => {
        const engine = new TestEngine();
        engine.delayMs = 12_000; // the first trace blocks its partition for the whole test
        const metrics = new StewardMetrics();
        const pipe = await startPipeline(cfg, ['tripwire'], { engine }, { logger: quietLogger(), metrics, lagRefreshMs: 300 });
        const producer = await adapter.producer();
        const lag = async () => {
          const text = await metrics.registry.metrics();
          const m = new RegExp(`^steward_consumer_lag\\{stage="tripwire",topic="${topics.traces.replace(/\./g, '\\.')}",partition="0"\\} (\\d+)$`, 'm').exec(text);
          return m ? Number(m[1]) : undefined;
        };
        try {
          const send = (from: number, n: number) =>
            producer.send([{ topic: topics.traces, messages: Array.from({ length: n }, (_, i) => trace(from + i, 'stuck')).map((t) => ({ key: t.agent_id, value: JSON.stringify(t), partition: 0 })) }]);
          await send(0, 5);
          await waitFor(async () => (await lag()) === 5, { timeoutMs: 20_000, message: 'lag 5 reported for the stalled partition' });
          await send(5, 7);
          await waitFor(async () => (await lag()) === 12, { timeoutMs: 20_000, message: 'lag grows to 12' });
          expect(engine.decided).toBe(1); // still stuck on the first trace
        } finally {
          engine.delayMs = 0;
          await producer.disconnect();
          await pipe.stop();
        }
      },
      { topics: { partitions: 1 } },
    );
  }, 90_000);
});
