import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeCtq, decideCtq, riskToIntervention } from '../../../../src/engine/ctq/index.js';
import { finalOutcome } from '../../../../src/engine/steward-engine.js';
import { INTERVENTIONS, severityRank, type MetricOutcome } from '../../../../src/engine/types.js';

const metric = fc.record({
  name: fc.string({ minLength: 1, maxLength: 5 }),
  score: fc.double({ min: 0, max: 1, noNaN: true }),
  weight: fc.double({ min: 0.01, max: 1, noNaN: true }),
  confidence: fc.double({ min: 0, max: 1, noNaN: true }),
  status: fc.constantFrom<MetricOutcome['status']>('ok', 'ok', 'unavailable', 'skipped'),
});
const toOutcome = (m: { name: string; score: number; weight: number; confidence: number; status: MetricOutcome['status'] }): MetricOutcome => ({
  ...m,
  score: m.status === 'ok' ? m.score : null,
  scorer: 'x',
});
const thresholds = fc
  .tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }))
  .map(([a, b, c]) => {
    const [ok, nudge, escalate] = [a, b, c].sort((x, y) => x - y);
    return { ok, nudge, escalate, block: escalate };
  });

describe('CTQ properties', () => {
  it('ctq and confidence stay in 0..1; ctq is null exactly when no metric answered', () => {
    fc.assert(
      fc.property(fc.array(metric, { maxLength: 8 }), (ms) => {
        const r = computeCtq(ms.map(toOutcome));
        const answered = ms.some((m) => m.status === 'ok');
        expect(r.ctq === null).toBe(!answered);
        if (r.ctq !== null) {
          expect(r.ctq).toBeGreaterThanOrEqual(0);
          expect(r.ctq).toBeLessThanOrEqual(1);
          expect(r.risk).toBeCloseTo(1 - r.ctq, 5);
        }
        expect(r.confidence).toBeGreaterThanOrEqual(0);
        expect(r.confidence).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('a higher score never yields a more severe CTQ intervention (monotone)', () => {
    fc.assert(
      fc.property(fc.array(metric, { minLength: 1, maxLength: 6 }), fc.nat(5), fc.double({ min: 0, max: 1, noNaN: true }), thresholds, (ms, k, bump, th) => {
        const base = ms.map((m) => ({ ...m, status: 'ok' as const }));
        const i = k % base.length;
        const better = base.map((m, j) => (j === i ? { ...m, score: Math.max(m.score, bump) } : m));
        const a = decideCtq(base.map(toOutcome), th, { policy: 'allow_and_log' }).intervention!;
        const b = decideCtq(better.map(toOutcome), th, { policy: 'allow_and_log' }).intervention!;
        expect(severityRank(b)).toBeLessThanOrEqual(severityRank(a));
      }),
    );
  });

  it('CTQ never halts; the final intervention is at least as severe as each stage', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), thresholds, fc.constantFrom(...INTERVENTIONS), (risk, th, d) => {
        const c = riskToIntervention(risk, th);
        expect(c).not.toBe('halt');
        const f = finalOutcome({ intervention: d, stage: d === 'ok' ? 'none' : 'rule', halted: d === 'halt' }, d === 'halt' ? null : c);
        expect(severityRank(f.intervention)).toBeGreaterThanOrEqual(severityRank(d));
        if (d !== 'halt') expect(severityRank(f.intervention)).toBeGreaterThanOrEqual(severityRank(c));
      }),
    );
  });
});
