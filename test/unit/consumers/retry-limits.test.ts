// spec-decisions D32: StageRunnerOptions.retryLimitsMs bounds the retries of the codes it names (Redis OOM);
// other retryable codes, and a bound of 0, keep retrying until the cause passes.
import { describe, expect, it } from 'vitest';
import type { StageOutput, StageProcessor } from '../../../src/consumers/stage-runner.js';
import { StewardError, type StewardErrorCode } from '../../../src/errors.js';
import type { BatchControl, InMessage, OutRecord, StewardProducer } from '../../../src/adapters/kafka/client.js';
import { startedRunner } from './fixtures.js';

const msg = (offset: number): InMessage => ({ topic: 'in', partition: 0, offset: String(offset), key: Buffer.from('a'), value: Buffer.from(`v${offset}`), headers: {}, timestampMs: 0 });

/** Offset 1 fails with `code` (retryable) for `failForMs`, then passes; the others pass at once. */
async function runWith(code: StewardErrorCode, failForMs: number, retryLimitsMs: Record<string, number>) {
  let first: number | undefined;
  let attempts = 0;
  const proc: StageProcessor = {
    stage: 'test',
    inputTopics: ['in'],
    async process(m): Promise<StageOutput[]> {
      if (m.offset === '1') {
        attempts++;
        first ??= Date.now();
        if (Date.now() - first < failForMs) throw new StewardError(code, 'refused', { retryable: true });
      }
      return [{ topic: 'out', message: { key: m.key, value: `o${m.offset}` } }];
    },
  };
  const sends: OutRecord[][] = [];
  const producer: StewardProducer = { send: async (r) => void sends.push(r), disconnect: async () => undefined };
  const { handle } = await startedRunner(proc, { producer, chunkSize: 10, retry: { initialMs: 5, maxMs: 10 }, retryLimitsMs });
  const resolved: string[] = [];
  const ctl: BatchControl = { resolveOffset: (o) => void resolved.push(o), heartbeat: async () => undefined, isRunning: () => true, isStale: () => false, commit: async () => undefined };
  await handle({ topic: 'in', partition: 0, highWatermark: '3', messages: [msg(0), msg(1), msg(2)] }, ctl);
  const sent = sends.flatMap((rs) => rs.flatMap((r) => r.messages.map((m) => ({ topic: r.topic, value: String(m.value), code: m.headers?.['x-steward-error-code']?.toString() }))));
  return { sent, resolved, attempts };
}

describe('bounded retries by error code', () => {
  it('an input failing with a bounded code is dead-lettered with that code once the bound has passed, and the partition moves on', async () => {
    const r = await runWith('STEWARD_STATE_OOM', 10_000, { STEWARD_STATE_OOM: 60 });
    expect(r.sent.map((s) => `${s.topic}:${s.value}`)).toEqual(['out:o0', 'out:o2', 'dlq:v1']);
    expect(r.sent.find((s) => s.topic === 'dlq')?.code).toBe('STEWARD_STATE_OOM');
    expect(r.attempts).toBeGreaterThan(1); // retried first
    expect(r.resolved).toEqual(['2']);
  });

  it('other retryable codes are not bounded by it: retried until the cause passes', async () => {
    const r = await runWith('STEWARD_STATE_UNAVAILABLE', 150, { STEWARD_STATE_OOM: 60 });
    expect(r.sent.map((s) => `${s.topic}:${s.value}`)).toEqual(['out:o0', 'out:o1', 'out:o2']);
  });

  it('a bound of 0 means no bound (redis.oom_retry_ms: 0 waits for memory)', async () => {
    const r = await runWith('STEWARD_STATE_OOM', 150, { STEWARD_STATE_OOM: 0 });
    expect(r.sent.map((s) => `${s.topic}:${s.value}`)).toEqual(['out:o0', 'out:o1', 'out:o2']);
  });
});
