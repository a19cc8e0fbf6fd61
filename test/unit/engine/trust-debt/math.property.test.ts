import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TRUST_DEBT_CONFIG,
  HOUR_MS,
  INTERVENTION_ORDER,
  MemoryTrustDebtStore,
  advance,
  applyDecay,
  detPow,
  levelFor,
  roundDebt,
  trustDebtConfigFrom,
  type AgentDebtState,
} from './imports.js';
import type { TrustDebtConfig } from '../../../../src/engine/types.js';

const T0 = Date.UTC(2026, 0, 1);

const arbCfg: fc.Arbitrary<TrustDebtConfig> = fc
  .record({
    rate: fc.double({ min: 0.5, max: 1, noNaN: true }),
    period: fc.double({ min: 0.5, max: 72, noNaN: true }),
    floor: fc.double({ min: 0, max: 0.3, noNaN: true }),
    block: fc.double({ min: 0, max: 1, noNaN: true }),
    credit: fc.double({ min: -1, max: 0, noNaN: true }),
    auditHours: fc.double({ min: 1, max: 400, noNaN: true }),
  })
  .map((r) =>
    trustDebtConfigFrom({
      accumulation: { block: r.block },
      decay: { rate: r.rate, period_hours: r.period, min_debt: r.floor },
      recovery: { successful_review_credit: r.credit, good_behavior_audit: { threshold_hours: r.auditHours, credit: r.credit } },
    }),
  );

const arbStep = fc.record({
  gapMs: fc.integer({ min: -2 * HOUR_MS, max: 400 * HOUR_MS }),
  kind: fc.constantFrom('intervention', 'intervention', 'intervention', 'review_approved', 'remediation_granted', 'audit_credit'),
  intervention: fc.constantFrom(...INTERVENTION_ORDER),
  severity: fc.constantFrom(undefined, 'standard', 'critical', 'severe', 'other'),
});

describe('trust-debt math properties (§10.2, §10.3, spec-decisions D15)', () => {
  it('decay over any sequence of ok events matches debt·rate^(Δh/period) (no audit credits)', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.array(fc.integer({ min: 0, max: 100 * HOUR_MS }), { maxLength: 30 }), (d0, gaps) => {
        const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: { credit: 0 } } });
        let s: AgentDebtState = { debt: d0, lastMs: T0, windowMs: T0, level: levelFor(d0, cfg), applied: 0 };
        let t = T0;
        for (const g of gaps) {
          t += g;
          s = advance(s, { atMs: t, delta: 0, resetsWindow: false }, cfg).state;
        }
        const expected = d0 * Math.pow(0.95, (t - T0) / HOUR_MS / 24);
        // each step keeps the debt on the 1e-12 grid (≤ 5e-13 per step)
        expect(Math.abs(s.debt - expected)).toBeLessThanOrEqual(5e-13 * (gaps.length + 1) + 1e-12 * expected);
      }),
    );
  });

  it('never exceeds 1.0 nor drops below the floor, for any config and event sequence', async () => {
    await fc.assert(
      fc.asyncProperty(arbCfg, fc.array(arbStep, { maxLength: 40 }), async (cfg, steps) => {
        const store = new MemoryTrustDebtStore();
        let t = T0;
        let i = 0;
        for (const st of steps) {
          t += st.gapMs;
          const c = await store.apply({ eventId: `e${i++}`, tenant: 't', agentId: 'a', atMs: t, kind: st.kind, intervention: st.intervention, severity: st.severity }, cfg);
          for (const x of [...(c.audits ?? []), c]) {
            for (const v of [x.before, x.after]) {
              expect(v).toBeLessThanOrEqual(1);
              expect(v).toBeGreaterThanOrEqual(cfg.decay.minDebt);
            }
            expect(x.level).toBe(levelFor(x.after, cfg));
          }
          const cur = (await store.current('t', 'a', t + st.gapMs, cfg)).debt;
          expect(cur).toBeLessThanOrEqual(1);
          expect(cur).toBeGreaterThanOrEqual(cfg.decay.minDebt);
        }
      }),
    );
  });

  it('decays first, then adds: after = min(1, max(floor, stored·rate^(Δh/period)) + increment)', () => {
    fc.assert(
      fc.property(
        arbCfg,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 500 * HOUR_MS }),
        fc.double({ min: 0, max: 2, noNaN: true }),
        (cfg, stored, dt, inc) => {
          const s: AgentDebtState = { debt: Math.max(stored, cfg.decay.minDebt), lastMs: T0, windowMs: T0 + dt, level: 'normal', applied: 1 };
          const r = advance(s, { atMs: T0 + dt, delta: inc, resetsWindow: true }, cfg);
          const factor = detPow(cfg.decay.rate, dt / HOUR_MS / cfg.decay.periodHours);
          const decayed = Math.max(cfg.decay.minDebt, roundDebt(s.debt * factor));
          expect(r.change.before).toBe(decayed);
          const exactFactor = cfg.decay.rate ** (dt / HOUR_MS / cfg.decay.periodHours);
          // relative error grows with |ln factor| (the argument of exp carries ~1e-16 relative error)
          const tol = 1e-15 * (1 + Math.abs(Math.log(exactFactor || 1e-300)));
          expect(Math.abs(factor - exactFactor)).toBeLessThanOrEqual(tol * exactFactor + 1e-300);
          expect(r.change.after).toBe(Math.min(1, Math.max(cfg.decay.minDebt, roundDebt(decayed + inc))));
          // the other order (add, then decay) differs whenever something decays and nothing caps
          if (dt > 0 && cfg.decay.rate < 1 && inc > 0 && decayed + inc < 1 && decayed > cfg.decay.minDebt) {
            const addThenDecay = (s.debt + inc) * cfg.decay.rate ** (dt / HOUR_MS / cfg.decay.periodHours);
            expect(r.change.after).toBeGreaterThan(addThenDecay - 1e-12);
          }
        },
      ),
    );
  });

  it('§10.3 examples: 1 day 95%, 7 days ≈70%, 14 days ≈49%', () => {
    const cfg = DEFAULT_TRUST_DEBT_CONFIG;
    expect(applyDecay(1, 24, cfg)).toBeCloseTo(0.95, 15);
    expect(applyDecay(1, 7 * 24, cfg)).toBeCloseTo(0.6983, 4);
    expect(applyDecay(1, 14 * 24, cfg)).toBeCloseTo(0.4877, 4);
    expect(applyDecay(0.01, 10_000, trustDebtConfigFrom({ decay: { min_debt: 0.005 } }))).toBe(0.005);
  });
});

describe('stored debt precision (1e-12 grid, same in TypeScript and Lua)', () => {
  it('roundDebt is idempotent, monotone and within 5e-13', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (a, b) => {
        const ra = roundDebt(a);
        expect(roundDebt(ra)).toBe(ra);
        expect(Math.abs(ra - a)).toBeLessThanOrEqual(5e-13 + 1e-16);
        if (a <= b) expect(ra).toBeLessThanOrEqual(roundDebt(b));
      }),
    );
    expect(roundDebt(0.1 + 0.2)).toBe(0.3);
    expect(roundDebt(0.49999999999999994)).toBe(0.5);
  });

  it('every value a store reports or keeps is on the grid', async () => {
    await fc.assert(
      fc.asyncProperty(arbCfg, fc.array(arbStep, { maxLength: 30 }), async (cfg, steps) => {
        const store = new MemoryTrustDebtStore();
        let t = T0;
        let i = 0;
        for (const st of steps) {
          t += st.gapMs;
          const c = await store.apply({ eventId: `e${i++}`, tenant: 't', agentId: 'a', atMs: t, kind: st.kind, intervention: st.intervention, severity: st.severity }, cfg);
          // min_debt is compiled onto the grid too (an off-grid floor would round upwards)
          expect(roundDebt(cfg.decay.minDebt)).toBe(cfg.decay.minDebt);
          const onGrid = (v: number) => roundDebt(v) === v;
          for (const x of [...(c.audits ?? []), c]) for (const v of [x.before, x.after]) expect(onGrid(v), String(v)).toBe(true);
          expect(onGrid((await store.current('t', 'a', t + st.gapMs, cfg)).debt)).toBe(true);
        }
      }),
    );
  });
});

describe('detPow (deterministic pow shared with the Redis Lua)', () => {
  it('agrees with Math.pow to ~1e-15·(1+|ln result|) relative', async () => {
    const { detPow, detLn, detExp } = await import('../../../../src/engine/trust-debt/math.js');
    fc.assert(
      fc.property(fc.double({ min: 1e-6, max: 1, noNaN: true }), fc.double({ min: 0, max: 5000, noNaN: true }), (b, x) => {
        const want = Math.pow(b, x);
        const got = detPow(b, x);
        if (want < 1e-300) expect(got).toBeLessThan(1e-290);
        else expect(Math.abs(got - want) / want).toBeLessThan(1e-15 * (1 + Math.abs(Math.log(want))));
      }),
      { numRuns: 2000 },
    );
    expect(detPow(0.95, 1)).toBeCloseTo(0.95, 15);
    expect(detPow(0.95, 0)).toBe(1);
    expect(detLn(1)).toBe(0);
    expect(detExp(-800)).toBe(0);
    expect(Math.abs(detLn(Math.E) - 1)).toBeLessThan(1e-15);
  });
});
