// §10.4.2 good-behaviour audit: all windows due by an event (or a sweep) are settled in one step, in time
// independent of how many windows there are. The reference is the window-by-window loop the engine used
// before (kept here): decay to each window's end, then the credit, stop crediting once the debt is at the
// floor. The closed form must leave the same debt, window and audit time.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  HOUR_MS,
  MemoryTrustDebtStore,
  combine,
  crossingsBetween,
  debtAt,
  decayBetween,
  levelFor,
  runAudits,
  trustDebtConfigFrom,
  type AgentDebtState,
  type StepChange,
} from './imports.js';
import type { TrustDebtConfig } from '../../../../src/engine/types.js';

const T0 = Date.UTC(2026, 0, 1);

/** The previous implementation: one iteration per window. */
function loopAudits(s: AgentDebtState, atMs: number, cfg: TrustDebtConfig): { state: AgentDebtState; changes: StepChange[] } {
  const changes: StepChange[] = [];
  const thr = cfg.recovery.goodBehaviorAudit.thresholdHours * HOUR_MS;
  const credit = cfg.recovery.goodBehaviorAudit.credit;
  let st = s;
  while (st.windowMs + thr <= atMs) {
    const due = st.windowMs + thr;
    const before = decayBetween(st.debt, st.lastMs, due, cfg);
    if (before <= cfg.decay.minDebt) {
      const k = Math.floor((atMs - st.windowMs) / thr);
      const w = st.windowMs + k * thr;
      st = { ...st, windowMs: w, lastAuditMs: w };
      break;
    }
    const after = combine(before, credit, cfg);
    const level = levelFor(after, cfg);
    changes.push({ atMs: due, before, after, level, previousLevel: st.level, crossings: crossingsBetween(st.level, level) });
    st = { ...st, debt: after, lastMs: Math.max(st.lastMs, due), windowMs: due, level, lastAuditMs: due };
  }
  return { state: st, changes };
}

const audit = (o: { rate?: number; period?: number; floor?: number; hours: number; credit: number }) =>
  trustDebtConfigFrom({
    decay: { rate: o.rate ?? 0.95, period_hours: o.period ?? 24, min_debt: o.floor ?? 0 },
    recovery: { good_behavior_audit: { threshold_hours: o.hours, credit: o.credit } },
  });

describe('good-behaviour audit in closed form (§10.4.2)', () => {
  it('matches the window-by-window loop: debt, window, last audit, level (small cases)', () => {
    fc.assert(
      fc.property(
        fc.record({
          rate: fc.oneof(fc.constant(1), fc.double({ min: 0.3, max: 1, noNaN: true })),
          period: fc.double({ min: 0.5, max: 72, noNaN: true }),
          floor: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.3, noNaN: true })),
          hours: fc.integer({ min: 1, max: 200 }),
          credit: fc.oneof(fc.constantFrom(-0.2, -0.1, -0.05), fc.double({ min: -1, max: -0.002, noNaN: true }), fc.double({ min: -0.05, max: -0.002, noNaN: true })),
        }),
        fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
        fc.integer({ min: 0, max: 100 * HOUR_MS }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 5 * HOUR_MS }),
        (c, d0, lastGap, windows, extra) => {
          const cfg = audit(c);
          const debt = Math.max(cfg.decay.minDebt, d0);
          const s: AgentDebtState = { debt, lastMs: T0 + lastGap, windowMs: T0 + lastGap, level: levelFor(debt, cfg), applied: 1 };
          const atMs = s.windowMs + windows * c.hours * HOUR_MS + extra;
          const want = loopAudits(s, atMs, cfg);
          const got = runAudits(s, atMs, cfg);
          expect(got.state.windowMs).toBe(want.state.windowMs);
          expect(got.state.lastAuditMs).toBe(want.state.lastAuditMs);
          // the debt an evaluation at atMs sees
          const w = decayBetween(want.state.debt, want.state.lastMs, atMs, cfg);
          const g = decayBetween(got.state.debt, got.state.lastMs, atMs, cfg);
          expect(Math.abs(g - w)).toBeLessThanOrEqual(1e-9);
          expect(got.changes.length).toBe(want.changes.length > 0 ? 1 : 0);
          const last = want.changes[want.changes.length - 1];
          if (last) {
            // the same windows credited: the change sits at the end of the loop's last credited window
            expect(got.changes[0]!.atMs).toBe(last.atMs);
            expect(got.state.lastMs).toBe(want.state.lastMs);
            expect(Math.abs(got.changes[0]!.after - last.after)).toBeLessThanOrEqual(1e-9);
            expect(got.state.level).toBe(levelFor(got.state.debt, cfg));
            expect(got.changes[0]!.before).toBe(decayBetween(s.debt, s.lastMs, last.atMs, cfg)); // before = no credit at all
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reports the windows it settles as one change at the last credited window', () => {
    const cfg = audit({ hours: 24, credit: -0.1 });
    const s: AgentDebtState = { debt: 1, lastMs: T0, windowMs: T0, level: 're_tiering_review', applied: 1 };
    const { state, changes } = runAudits(s, T0 + 5 * 24 * HOUR_MS + HOUR_MS, cfg);
    const ref = loopAudits(s, T0 + 5 * 24 * HOUR_MS + HOUR_MS, cfg);
    expect(ref.changes).toHaveLength(5);
    expect(changes).toHaveLength(1);
    const [c] = changes;
    expect(c!.atMs).toBe(T0 + 5 * 24 * HOUR_MS);
    expect(c!.before).toBe(decayBetween(1, T0, T0 + 5 * 24 * HOUR_MS, cfg)); // 0.95^5, no credit
    expect(c!.after).toBeCloseTo(ref.changes[4]!.after, 12);
    expect(c!.previousLevel).toBe('re_tiering_review');
    expect(c!.crossings).toEqual(crossingsBetween('re_tiering_review', c!.level));
    expect(state).toMatchObject({ windowMs: T0 + 5 * 24 * HOUR_MS, lastAuditMs: T0 + 5 * 24 * HOUR_MS, lastMs: T0 + 5 * 24 * HOUR_MS });
  });

  it('stays fast for a tiny window, a tiny credit and a long gap (billions of windows)', async () => {
    const cfg = audit({ hours: 0.000001, credit: -1e-15 }); // 3.6 ms windows, a credit below the 1e-12 grid
    const s: AgentDebtState = { debt: 1, lastMs: T0, windowMs: T0, level: 're_tiering_review', applied: 1 };
    const year = 365 * 24 * HOUR_MS;
    const t = performance.now();
    const { state } = runAudits(s, T0 + year, cfg);
    // sub-grid credits add up over 8.76e9 windows: at most the decay alone, never below the floor
    const d = debtAt(s, T0 + year, cfg);
    expect(d).toBeGreaterThanOrEqual(0);
    expect(d).toBeLessThanOrEqual(0.95 ** 365 + 1e-12);
    const store = new MemoryTrustDebtStore();
    await store.apply({ eventId: 'h', tenant: 't', agentId: 'a', atMs: T0, kind: 'intervention', intervention: 'halt', severity: 'critical' }, cfg);
    await store.apply({ eventId: 'ok', tenant: 't', agentId: 'a', atMs: T0 + year, kind: 'intervention', intervention: 'ok' }, cfg);
    await store.sweep(T0 + 2 * year, () => cfg);
    expect(performance.now() - t).toBeLessThan(250);
    expect(state.windowMs).toBeGreaterThan(T0 + year - 3.6);
    const big = audit({ hours: 0.001, credit: -0.000001 }); // 3.6 s windows, each credit moves the debt: the credited windows are many too
    const t2 = performance.now();
    const r = runAudits(s, T0 + year, big);
    expect(performance.now() - t2).toBeLessThan(250);
    expect(r.changes).toHaveLength(1);
    expect(r.state.debt).toBeGreaterThanOrEqual(0);
  });
});
