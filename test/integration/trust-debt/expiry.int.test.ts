// Issue #22 item 4: per-agent trust-debt state is bounded — a hash at the floor expires (after the dedup TTL),
// any other debt persists, and the sweep drops expired agents from the known-agents set
// (docs/trust-debt.md, state that expires). On real Redis.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { HOUR_MS, MemoryTrustDebtStore, trustDebtConfigFrom, type TrustDebtEvent } from '../../../src/engine/trust-debt/index.js';
import { INTERVENTIONS } from '../../../src/engine/types.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const redis = redisClient();
const prefixes: string[] = [];
const newStore = (dedupTtlSeconds?: number) => {
  const p = uniqueRedisPrefix('td-exp');
  prefixes.push(p);
  return new RedisTrustDebtStore(redis, { prefix: p, dedupTtlSeconds });
};

afterAll(async () => {
  for (const p of prefixes.splice(0)) await deleteRedisPrefix(redis, p);
  redis.disconnect();
});

const T0 = Date.UTC(2026, 0, 1);
const ev = (i: number, atMs: number, intervention: TrustDebtEvent['intervention'], agentId = 'a'): TrustDebtEvent => ({ eventId: `e${i}`, tenant: 't', agentId, atMs, kind: 'intervention', intervention });

describe('trust-debt hashes expire once the debt is at the floor', () => {
  it('at the floor: TTL = the dedup TTL; charged: no TTL; decayed back to the floor: TTL again', async () => {
    const red = newStore(3600);
    const cfg = trustDebtConfigFrom({ decay: { rate: 0.5, period_hours: 1, min_debt: 0 } });
    const key = red.agentKey('t', 'a');
    await red.apply(ev(1, T0, 'ok'), cfg);
    const ttl1 = await redis.ttl(key);
    expect(ttl1).toBeGreaterThan(3590);
    expect(ttl1).toBeLessThanOrEqual(3600);
    const charged = await red.apply(ev(2, T0 + 1000, 'block'), cfg);
    expect(charged.after).toBeGreaterThan(0);
    expect(await redis.ttl(key)).toBe(-1); // persists while there is debt to decay
    // 0.5 per hour: after 100 hours the debt is below the 1e-12 grid, i.e. exactly the floor
    const back = await red.apply(ev(3, T0 + 100 * HOUR_MS, 'ok'), cfg);
    expect(back.after).toBe(0);
    expect(await redis.ttl(key)).toBeGreaterThan(3590);
  });

  it('a level above normal at the floor (a floor past a threshold) is kept', async () => {
    const red = newStore(3600);
    const cfg = trustDebtConfigFrom({ decay: { min_debt: 0.6 } });
    const r = await red.apply(ev(1, T0, 'ok'), cfg);
    expect(r.after).toBe(0.6);
    expect(r.level).not.toBe('normal');
    expect(await redis.ttl(red.agentKey('t', 'a'))).toBe(-1);
  });

  it('an expired hash is, to every later event, the agent it was: same changes as a store that never forgets', async () => {
    let expired = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({ rate: fc.double({ min: 0.01, max: 0.9, noNaN: true }), period: fc.double({ min: 0.01, max: 2, noNaN: true }), floor: fc.constantFrom(0, 0, 0.05) }),
        fc.array(
          fc.record({
            // in event-time order: see docs/trust-debt.md for why a late event cannot meet an expired hash
            gap: fc.integer({ min: 0, max: 2000 * HOUR_MS }),
            kind: fc.constantFrom('intervention', 'intervention', 'review_approved', 'audit_credit'),
            intervention: fc.constantFrom(...INTERVENTIONS),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (c, steps) => {
          const cfg = trustDebtConfigFrom({ decay: { rate: c.rate, period_hours: c.period, min_debt: c.floor }, recovery: { good_behavior_audit: { threshold_hours: 1 } } });
          const mem = new MemoryTrustDebtStore();
          const red = newStore();
          const key = red.agentKey('t', 'a');
          let t = T0;
          let i = 0;
          for (const s of steps) {
            t += s.gap;
            const e: TrustDebtEvent = { eventId: `e${i++}`, tenant: 't', agentId: 'a', atMs: t, kind: s.kind, intervention: s.intervention };
            const a = await mem.apply(e, cfg);
            const b = await red.apply(e, cfg);
            expect([b.before, b.after, b.level, b.crossings]).toEqual([a.before, a.after, a.level, a.crossings]);
            expect((b.audits ?? []).map((x) => [x.atMs, x.before, x.after])).toEqual((a.audits ?? []).map((x) => [x.atMs, x.before, x.after]));
            // what Redis does when the TTL runs out
            if ((await redis.ttl(key)) > 0) {
              await redis.del(key);
              expired++;
            }
          }
        },
      ),
      { numRuns: 60 },
    );
    expect(expired).toBeGreaterThan(10);
  });

  it('the sweep drops expired agents from the known-agents set (and keeps the others)', async () => {
    const red = newStore(3600);
    const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 1 } } });
    await red.apply(ev(1, T0, 'ok', 'idle'), cfg);
    await red.apply(ev(2, T0, 'block', 'charged'), cfg);
    expect(await red.knownAgents()).toHaveLength(2);
    await redis.pexpire(red.agentKey('t', 'idle'), 1);
    await new Promise((r) => setTimeout(r, 20));
    await red.sweep(T0 + HOUR_MS, () => cfg);
    expect(await red.knownAgents()).toEqual([['t', 'charged']]);
    // the agent comes back with its next event
    await red.apply(ev(3, T0 + 2 * HOUR_MS, 'flag', 'idle'), cfg);
    expect(await red.knownAgents()).toHaveLength(2);
  });
});
