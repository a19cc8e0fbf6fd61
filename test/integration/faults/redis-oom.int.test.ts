// Issue #22 fault test "Redis OOM": a private redis-server (the shared one is never touched) with a small
// maxmemory and noeviction, filled until it refuses writes. Decisions fail closed at once (the rate tripwire's
// error is STEWARD_STATE_OOM, the outcome degraded); a write the stages cannot do without (the trust-debt
// update of a rule block) is retried for redis.oom_retry_ms and then dead-lettered with STEWARD_STATE_OOM —
// never retried for ever, never dropped without a DLQ record (spec-decisions D32); the scorer's verdicts are
// not held back by the review queue it cannot write. Once memory is freed the
// partitions move on as normal. Real Kafka, Redis, ClickHouse; the real engine on the shipped blueprints.
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { readDlqHeaders } from '../../../src/adapters/kafka/dlq.js';
import { waitFor } from '../setup/helpers.js';
import { freePort, pingable } from '../setup/private-redis.js';
import { refund, withFaultStream } from './stream.js';

const OOM_RETRY_MS = 3000;

function startSmallRedis(port: number): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory', '24mb', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
}

/**
 * Writes 512 KiB values until Redis answers OOM, then lowers maxmemory to half of what is used: a fill alone leaves
 * Redis just under its limit (the refused write's buffers are freed again), where small writes still pass now and
 * then; below the limit every write is refused, as on a Redis that ran full. Returns the values written.
 */
async function fill(r: Redis): Promise<number> {
  const blob = 'x'.repeat(512 * 1024);
  for (let i = 0; i < 1000; i++) {
    try {
      await r.set(`filler:${i}`, blob);
    } catch (e) {
      expect((e as Error).message).toMatch(/^OOM /);
      const used = Number(/used_memory:(\d+)/.exec(await r.info('memory'))?.[1]);
      await r.config('SET', 'maxmemory', String(Math.floor(used / 2)));
      await expect(r.set('probe', '1')).rejects.toThrow(/^OOM /);
      return i;
    }
  }
  throw new Error('Redis never refused a write: maxmemory not applied?');
}

describe('Redis out of memory (maxmemory, noeviction)', () => {
  it('fails decisions closed as degraded, dead-letters refused debt writes after the bound with STEWARD_STATE_OOM, and moves on once memory is back', async () => {
    const port = await freePort();
    const proc = startSmallRedis(port);
    const url = `redis://127.0.0.1:${port}`;
    const admin = new Redis(url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    try {
      await waitFor(() => pingable(port), { timeoutMs: 15_000, message: 'private redis' });
      await withFaultStream(
        'flt-redis-oom',
        async ({ cfg, topics, out, client }) => {
          const p = cfg.topics.prefix;
          const block = (i: number) => ({ ...refund(p, i), args: { amount: 50, order_id: '' } }); // refund_agent: a rule blocks it
          // Before: normal decisions, one trust-debt event each.
          for (let i = 0; i < 3; i++) {
            const d = await client.decide(i === 1 ? block(i) : refund(p, i), { timeoutMs: 15_000 });
            expect(d.degraded === true).toBe(false);
          }
          await waitFor(() => out.byId(topics.trustDebt, 'trace_id').size === 3, { timeoutMs: 20_000, message: 'debt events before OOM' });

          const filled = await fill(admin);
          expect(filled).toBeGreaterThan(0);
          const t0 = Date.now();
          // The stateful tripwire cannot record its hit: it fails closed at once, as a dependency failure.
          const forced = await client.decide(refund(p, 3), { timeoutMs: 15_000 });
          expect(forced.fallback, 'the stage answers').toBeUndefined();
          expect(forced.tripwires.find((t) => t.id === 'refund_rate')?.error?.code).toBe('STEWARD_STATE_OOM');
          expect(forced.intervention).toBe('escalate');
          expect(forced.degraded).toBe(true);
          // A rule block decides on its own (not degraded): its trust-debt update needs a write Redis refuses.
          const blocked = await client.decide(block(4), { timeoutMs: 15_000 });
          expect(blocked.intervention).toBe('block');
          expect(blocked.degraded === true).toBe(false);

          // Not retried for ever: dead-lettered by the trust-debt stage with the OOM code, after the bound.
          const dlqOf = (id: string) => out.on(topics.dlq).filter((m) => m.value?.toString('utf8').includes(id)).map((m) => readDlqHeaders(m));
          await waitFor(() => dlqOf(blocked.trace_id).some((h) => h.stage === 'trust-debt'), { timeoutMs: 30_000, message: 'the refused debt update in the DLQ' });
          const h = dlqOf(blocked.trace_id).find((x) => x.stage === 'trust-debt')!;
          expect(h.code).toBe('STEWARD_STATE_OOM');
          expect(h.message).toMatch(/out of memory/);
          expect(Date.now() - t0, 'retried for redis.oom_retry_ms first').toBeGreaterThanOrEqual(OOM_RETRY_MS);
          expect(out.byId(topics.trustDebt, 'trace_id').has(blocked.trace_id)).toBe(false);
          // The verdicts are not lost to the review queue the scorer could not write (their reviews are published
          // with the reason instead); every DLQ record of the period names the OOM code.
          for (const id of [forced.trace_id, blocked.trace_id]) expect(out.byId(topics.verdicts).has(id), `verdict of ${id}`).toBe(true);
          expect(out.on(topics.dlq).map((m) => readDlqHeaders(m)).map((x) => `${x.stage}:${x.code}`)).toEqual(['trust-debt:STEWARD_STATE_OOM']);

          // Memory back: the same partitions move on, debt is charged again.
          await admin.flushall();
          await admin.config('SET', 'maxmemory', '24mb');
          const after = await client.decide(block(5), { timeoutMs: 15_000 });
          expect(after.degraded === true).toBe(false);
          expect(after.tripwires.find((t) => t.id === 'refund_rate')?.error).toBeUndefined();
          await waitFor(() => out.byId(topics.trustDebt, 'trace_id').has(after.trace_id), { timeoutMs: 20_000, message: 'debt event after memory is back' });
          expect(out.byId(topics.trustDebt, 'trace_id').has(forced.trace_id), 'a degraded outcome moves no debt').toBe(false);
        },
        { redisUrl: url, raw: { redis: { oom_retry_ms: OOM_RETRY_MS } } },
      );
    } finally {
      admin.disconnect();
      proc.kill('SIGKILL');
    }
  }, 150_000);
});
