// Issue #22 fault test: Redis answers, but slower than the decision budget (a TCP proxy in front of the real
// Redis delays every chunk by 400 ms; support-1's tier allows 150 ms). The stateful tripwire (refund_rate)
// cannot be evaluated in time: the decision fails closed with the blueprint's fallback, marked degraded
// (spec-decisions D20), and gives the agent no trust debt; once Redis is fast again decisions are normal.
// Real Kafka, Redis, ClickHouse; the real engine on the shipped blueprints.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { services, waitFor } from '../setup/helpers.js';
import { TcpFaultProxy } from './fault-proxy.js';
import { refund, storedDecisions, withFaultStream } from './stream.js';

describe('Redis slower than the decision budget', () => {
  it('fails closed as degraded, charges no trust debt, and recovers when Redis is fast again', async () => {
    const target = new URL(services().redisUrl);
    const proxy = await TcpFaultProxy.start(target.hostname, Number(target.port));
    try {
      await withFaultStream(
        'flt-redis-slow',
        async ({ cfg, topics, out, client, rt, store, redisPrefix }) => {
          const p = cfg.topics.prefix;
          const bp = rt.holder.current().get('support/refund_agent@1.0')?.trustDebt ?? DEFAULT_TRUST_DEBT_CONFIG;
          const direct = new Redis(services().redisUrl);
          const debtAt = async (i: number) => (await new RedisTrustDebtStore(direct, { prefix: redisPrefix }).current('acme', 'support-1', Date.parse(refund(p, i).timestamp), bp)).debt;
          try {
            // Normal speed: a refund without an order id is blocked by a rule, which charges debt.
            const fast = [];
            for (let i = 0; i < 3; i++) fast.push(await client.decide(i === 1 ? { ...refund(p, i), args: { amount: 50, order_id: '' } } : refund(p, i), { timeoutMs: 15_000 }));
            expect(fast.map((d) => d.degraded === true)).toEqual([false, false, false]);
            await waitFor(() => out.byId(topics.trustDebt, 'trace_id').size === 3, { timeoutMs: 20_000, message: 'debt events before the slowdown' });
            const before = await debtAt(3);
            expect(before).toBeGreaterThan(0);

            proxy.delayMs = 400;
            const slow: string[] = [];
            for (let i = 3; i < 7; i++) {
              const d = await client.decide(refund(p, i), { timeoutMs: 20_000 });
              expect(d.fallback, 'the stage answers (the client did not time out)').toBeUndefined();
              const rate = d.tripwires.find((t) => t.id === 'refund_rate');
              expect(rate?.error, `${d.trace_id}: refund_rate cannot be evaluated in time`).toBeDefined();
              expect(d.approved).toBe(false);
              expect(d.intervention).toBe('escalate'); // refund_agent's governance fallback
              expect(d.degraded).toBe(true);
              slow.push(d.trace_id);
            }
            // The degraded verdicts arrive, and no trust-debt event is published for them.
            await waitFor(() => slow.every((id) => out.byId(topics.verdicts).has(id)), { timeoutMs: 30_000, message: 'verdicts of the slow period' });
            expect(slow.every((id) => out.byId(topics.verdicts).get(id).degraded === true)).toBe(true);
            proxy.delayMs = 0;
            const after = await client.decide(refund(p, 7), { timeoutMs: 15_000 });
            expect(after.degraded === true).toBe(false);
            expect(after.tripwires.find((t) => t.id === 'refund_rate')?.error).toBeUndefined();
            await waitFor(() => out.byId(topics.trustDebt, 'trace_id').has(after.trace_id), { timeoutMs: 20_000, message: 'debt event after recovery' });
            expect(slow.filter((id) => out.byId(topics.trustDebt, 'trace_id').has(id))).toEqual([]);
            // The debt moved only by the decay between the events, never up by the degraded escalations.
            expect(await debtAt(7)).toBeLessThanOrEqual(before);
            // Everything, degraded or not, is recorded in ClickHouse.
            const ids = [...fast.map((d) => d.trace_id), ...slow, after.trace_id];
            await waitFor(async () => (await storedDecisions(store, ids)).size === ids.length, { timeoutMs: 30_000, message: 'decisions in ClickHouse' });
            expect(out.on(topics.dlq)).toEqual([]);
          } finally {
            direct.disconnect();
          }
        },
        { redisUrl: `redis://127.0.0.1:${proxy.port}` },
      );
    } finally {
      await proxy.close();
    }
  }, 150_000);
});
