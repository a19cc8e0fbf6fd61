// A chunk that takes longer than the consumer session (one agent's traces, each waiting on a slow dependency)
// must not get its member evicted: on real Kafka, 12 traces of one agent at 700 ms each (8.4 s) with a 6 s
// session are each decided once and committed. Without heartbeats during the chunk the member was evicted,
// rejoined and redid the chunk from the last commit (never committed, decided again and again).
import { describe, expect, it } from 'vitest';
import { startPipeline } from '../../../src/process/pipeline.js';
import { Collector, TestEngine, quietLogger, trace, withPipelineEnv } from './harness.js';
import { waitFor } from '../setup/helpers.js';

describe('a chunk longer than the session (real Kafka)', () => {
  it('is processed once and committed', async () => {
    await withPipelineEnv(
      'pl-slow',
      async ({ cfg, topics, adapter }) => {
        const engine = new TestEngine();
        engine.delayMs = 700;
        const pipe = await startPipeline(cfg, ['tripwire'], { engine }, { logger: quietLogger() });
        const out = await new Collector(adapter, [topics.decisions]).start();
        const producer = await adapter.producer();
        try {
          const traces = Array.from({ length: 12 }, (_, i) => trace(i, 'slow-agent'));
          await producer.send([{ topic: topics.traces, messages: traces.map((t) => ({ key: t.agent_id, value: JSON.stringify(t) })) }]);
          await waitFor(() => out.byId(topics.decisions).size === 12, { timeoutMs: 40_000, message: '12 decisions' });
          const admin = await adapter.admin();
          try {
            await waitFor(
              async () => {
                const offsets = await admin.groupOffsets(`${cfg.consumer.groupPrefix}-tripwire`, topics.traces);
                return offsets.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0) === 12;
              },
              { timeoutMs: 15_000, message: 'offsets committed' },
            );
          } finally {
            await admin.disconnect();
          }
          // each trace decided once: no eviction, no redo of the chunk
          expect(engine.decided).toBe(12);
          expect(out.on(topics.decisions)).toHaveLength(12);
        } finally {
          await producer.disconnect();
          await out.stop();
          await pipe.stop();
        }
      },
      { consumer: { session_timeout_ms: 6000 }, topics: { partitions: 1 } },
    );
  }, 90_000);
});
