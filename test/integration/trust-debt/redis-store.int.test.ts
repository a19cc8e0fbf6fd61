import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { startAuditSweep } from '../../../src/consumers/audit-sweep.js';
import { HOUR_MS, MemoryTrustDebtStore, roundDebt, trustDebtConfigFrom, type TrustDebtEvent } from '../../../src/engine/trust-debt/index.js';
import { INTERVENTIONS } from '../../../src/engine/types.js';
import { describeTrustDebtStore } from '../../unit/engine/trust-debt/store-suite.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const redis = redisClient();
const prefixes: string[] = [];
const newStore = async () => {
  const p = uniqueRedisPrefix('td-it');
  prefixes.push(p);
  return new RedisTrustDebtStore(redis, { prefix: p });
};
const cleanup = async () => {
  for (const p of prefixes.splice(0)) await deleteRedisPrefix(redis, p);
};

describeTrustDebtStore('redis', newStore, cleanup);

describe('RedisTrustDebtStore agrees with MemoryTrustDebtStore', () => {
  afterAll(async () => {
    await cleanup();
    redis.disconnect();
  });

  it('same sequence → bit-identical changes (Lua doubles vs JS doubles)', async () => {
    let exact = 0;
    let total = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({ rate: fc.double({ min: 0.5, max: 1, noNaN: true }), period: fc.double({ min: 0.5, max: 72, noNaN: true }), floor: fc.double({ min: 0, max: 0.2, noNaN: true }) }),
        fc.array(
          fc.record({
            gap: fc.integer({ min: -HOUR_MS, max: 300 * HOUR_MS }),
            kind: fc.constantFrom('intervention', 'intervention', 'review_approved', 'audit_credit'),
            intervention: fc.constantFrom(...INTERVENTIONS),
            severity: fc.constantFrom(undefined, 'critical', 'severe'),
            defer: fc.boolean(),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        async (c, steps) => {
          const cfg = trustDebtConfigFrom({ decay: { rate: c.rate, period_hours: c.period, min_debt: c.floor }, recovery: { good_behavior_audit: { threshold_hours: 100 } } });
          const mem = new MemoryTrustDebtStore();
          const red = await newStore();
          let t = Date.UTC(2026, 0, 1);
          let i = 0;
          for (const s of steps) {
            t += s.gap;
            const ev: TrustDebtEvent = { eventId: `e${i++}`, tenant: 't', agentId: 'a', atMs: t, kind: s.kind, intervention: s.intervention, severity: s.severity, deferAudits: s.defer };
            const a = await mem.apply(ev, cfg);
            const b = await red.apply(ev, cfg);
            expect(b.level).toBe(a.level);
            expect(b.crossings).toEqual(a.crossings);
            expect(b.audits?.length ?? 0).toBe(a.audits?.length ?? 0);
            // bit for bit: both use detPow and the same operation order
            expect(b.before).toBe(a.before);
            expect(b.after).toBe(a.after);
            expect((b.audits ?? []).map((x) => [x.atMs, x.before, x.after])).toEqual((a.audits ?? []).map((x) => [x.atMs, x.before, x.after]));
            total++;
            if (a.after === b.after && a.before === b.before) exact++;
          }
        },
      ),
      { numRuns: 40 },
    );
    console.log(`trust-debt redis/memory bit-exact agreement: ${exact}/${total}`);
    expect(total).toBeGreaterThan(0);
  });

  it('many audit windows at once (closed form + bisection in Lua) → bit-identical, and fast', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          rate: fc.oneof(fc.constant(1), fc.double({ min: 0.5, max: 1, noNaN: true })),
          floor: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.2, noNaN: true })),
          hours: fc.constantFrom(0.001, 0.5, 3, 24),
          credit: fc.oneof(fc.constantFrom(-0.2, -0.01), fc.double({ min: -0.3, max: -1e-9, noNaN: true })),
        }),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 1000 * HOUR_MS }), intervention: fc.constantFrom(...INTERVENTIONS) }), { minLength: 1, maxLength: 12 }),
        async (c, steps) => {
          const cfg = trustDebtConfigFrom({ decay: { rate: c.rate, min_debt: c.floor }, recovery: { good_behavior_audit: { threshold_hours: c.hours, credit: c.credit } } });
          const mem = new MemoryTrustDebtStore();
          const red = await newStore();
          let t = Date.UTC(2026, 0, 1);
          let i = 0;
          for (const s of steps) {
            t += s.gap;
            const ev: TrustDebtEvent = { eventId: `w${i++}`, tenant: 't', agentId: 'w', atMs: t, kind: 'intervention', intervention: s.intervention, severity: 'critical' };
            const a = await mem.apply(ev, cfg);
            const b = await red.apply(ev, cfg);
            expect([b.before, b.after, b.level]).toEqual([a.before, a.after, a.level]);
            expect((b.audits ?? []).map((x) => [x.eventId, x.atMs, x.before, x.after, x.level])).toEqual((a.audits ?? []).map((x) => [x.eventId, x.atMs, x.before, x.after, x.level]));
            expect(a.audits?.length ?? 0).toBeLessThanOrEqual(1);
          }
          const end = t + 500 * HOUR_MS;
          expect(await red.sweep(end, () => cfg)).toEqual(await mem.sweep(end, () => cfg));
        },
      ),
      { numRuns: 40 },
    );
    // 3.6 ms windows over a year with a tiny credit: billions of windows, one script call
    const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 0.000001, credit: -1e-9 } } });
    const red = await newStore();
    const t0 = Date.UTC(2026, 0, 1);
    await red.apply({ eventId: 'y0', tenant: 't', agentId: 'y', atMs: t0, kind: 'intervention', intervention: 'halt', severity: 'critical' }, cfg);
    const started = performance.now();
    const c = await red.apply({ eventId: 'y1', tenant: 't', agentId: 'y', atMs: t0 + 365 * 24 * HOUR_MS, kind: 'intervention', intervention: 'ok' }, cfg);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(c.audits).toHaveLength(1);
  });

  it('a NaN debt left in Redis by the old severity bug reads as the floor in both stores', async () => {
    const red = await newStore();
    const mem = new MemoryTrustDebtStore();
    const cfg = trustDebtConfigFrom({ decay: { min_debt: 0.05 } });
    const t0 = Date.UTC(2026, 0, 1);
    const first = { eventId: 'n0', tenant: 't', agentId: 'nan', atMs: t0, kind: 'intervention', intervention: 'block' } as const;
    await red.apply(first, cfg);
    await mem.apply(first, cfg);
    await redis.hset(red.agentKey('t', 'nan'), 'd', '-nan'); // what the Lua wrote for NaN (%.17g)
    (mem as unknown as { agents: Map<string, { state: { debt: number } }> }).agents.get('t\u0000nan')!.state.debt = Number.NaN;
    const next = { eventId: 'n1', tenant: 't', agentId: 'nan', atMs: t0 + HOUR_MS, kind: 'intervention', intervention: 'flag' } as const;
    const a = await mem.apply(next, cfg);
    const b = await red.apply(next, cfg);
    expect(a.before).toBe(0.05);
    expect(a.after).toBeCloseTo(0.1, 15);
    expect([b.before, b.after]).toEqual([a.before, a.after]);
  });

  it('the periodic audit sweep credits each window once and leaves a lag for the backlog', async () => {
    const store = await newStore();
    const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: {} } }); // opt-in; the §10.1 example values
    const t0 = Date.UTC(2026, 0, 1);
    await store.apply({ eventId: 's1', tenant: 't', agentId: 'sw', atMs: t0, kind: 'intervention', intervention: 'halt' }, cfg);
    let clock = t0 + 168 * HOUR_MS + HOUR_MS / 2; // window complete, but within the 1 h lag
    const seen: string[] = [];
    const sweeper = startAuditSweep(store, { cfgFor: () => cfg, onChanges: (cs) => void seen.push(...cs.map((c) => c.eventId)), now: () => clock, intervalMs: 3_600_000 });
    try {
      expect(await sweeper.runOnce()).toEqual([]);
      clock = t0 + 170 * HOUR_MS;
      const granted = await sweeper.runOnce();
      expect(granted.map((c) => c.eventId)).toEqual([`audit:t:sw:${t0 + 168 * HOUR_MS}`]);
      expect(granted[0]!.after).toBe(roundDebt(granted[0]!.before - 0.2)); // debt is kept on the 1e-12 grid
      expect(await sweeper.runOnce()).toEqual([]);
      expect(seen).toEqual([`audit:t:sw:${t0 + 168 * HOUR_MS}`]);
    } finally {
      await sweeper.stop();
    }
  });

  it('applies concurrently issued events in call order, across batches and alternating settings', async () => {
    const a = trustDebtConfigFrom({ accumulation: { flag: 0.07 } });
    const b = trustDebtConfigFrom({ accumulation: { flag: 0.03 }, decay: { rate: 0.9 } });
    const red = new RedisTrustDebtStore(redis, { prefix: (await newStore()).prefix, maxBatch: 7 });
    const mem = new MemoryTrustDebtStore();
    const t0 = Date.UTC(2026, 0, 1);
    const evs: [TrustDebtEvent, typeof a][] = Array.from({ length: 200 }, (_, i) => [
      { eventId: `o${i}`, tenant: 't', agentId: 'ordered', atMs: t0 + i * 1_800_000, kind: 'intervention', intervention: i % 5 === 0 ? 'ok' : 'flag' },
      i % 3 === 0 ? b : a,
    ]);
    const got = await Promise.all(evs.map(([e, c]) => red.apply(e, c))); // all in flight at once
    for (let i = 0; i < evs.length; i++) {
      const want = await mem.apply(evs[i]![0], evs[i]![1]);
      expect(got[i]!.before).toBe(want.before);
      expect(got[i]!.after).toBe(want.after);
    }
  });
});
