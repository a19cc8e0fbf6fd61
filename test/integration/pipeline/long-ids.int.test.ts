// Issue #22 item 4: ids longer than 256 characters (they would become Redis keys and ClickHouse sort keys)
// are dead-lettered by the tripwire stage with the reason; a valid trace behind them is decided. Real Kafka.
import { describe, expect, it } from 'vitest';
import { startPipeline } from '../../../src/process/pipeline.js';
import { readDlqHeaders } from '../../../src/adapters/kafka/dlq.js';
import { Collector, TestEngine, quietLogger, trace, withPipelineEnv } from './harness.js';
import { waitFor } from '../setup/helpers.js';

describe('long ids through the stream', () => {
  it('a 257-character agent_id or trace_id lands in the DLQ as STEWARD_TRACE_SCHEMA naming the limit', { timeout: 120_000 }, async () => {
    await withPipelineEnv('pl-long-ids', async ({ cfg, topics, adapter }) => {
      const pipe = await startPipeline(cfg, ['tripwire'], { engine: new TestEngine() }, { logger: quietLogger() });
      const out = await new Collector(adapter, [topics.decisions, topics.dlq]).start();
      const producer = await adapter.producer();
      try {
        const longAgent = 'a'.repeat(257);
        await producer.send([
          {
            topic: topics.traces,
            messages: [
              { key: 'x', value: Buffer.from(JSON.stringify(trace(1, longAgent))) },
              { key: 'y', value: Buffer.from(JSON.stringify({ ...trace(2, 'y'), trace_id: 't'.repeat(257) })) },
              { key: 'ok', value: Buffer.from(JSON.stringify(trace(3, 'ok', { trace_id: 't-ok-' + 'i'.repeat(250) }))) },
            ],
          },
        ]);
        await waitFor(() => out.on(topics.dlq).length >= 2 && out.on(topics.decisions).length >= 1, { timeoutMs: 60_000, message: 'two dead letters and one decision' });
        const dlq = out.on(topics.dlq).map(readDlqHeaders);
        expect(dlq.map((h) => h.code)).toEqual(['STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_SCHEMA']);
        for (const h of dlq) expect(h.message).toMatch(/256/);
        expect(out.json(topics.decisions).map((d) => d.agent_id)).toEqual(['ok']);
      } finally {
        await producer.disconnect();
        await out.stop();
        await pipe.stop();
      }
    });
  });
});
