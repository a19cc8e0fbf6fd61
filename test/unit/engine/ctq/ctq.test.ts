import { describe, expect, it } from 'vitest';
import { computeCtq, decideCtq, fallbackPolicy, riskToIntervention } from '../../../../src/engine/ctq/index.js';
import type { MetricOutcome } from '../../../../src/engine/types.js';

const m = (name: string, score: number | null, weight: number, status: MetricOutcome['status'] = 'ok', confidence = 1): MetricOutcome => ({
  name,
  score,
  weight,
  confidence,
  scorer: 'x',
  status,
});
const th = { ok: 0.25, nudge: 0.4, escalate: 0.55, block: 0.7 };

describe('computeCtq', () => {
  it('weighted average over answered metrics; risk = 1 - ctq', () => {
    const r = computeCtq([m('a', 1, 0.25), m('b', 0.5, 0.75)]);
    expect(r.ctq).toBeCloseTo(0.625);
    expect(r.risk).toBeCloseTo(0.375);
    expect(r.coverage).toBe(1);
  });
  it('confidence reflects coverage and scorer confidence; skipped metrics do not count', () => {
    const r = computeCtq([m('a', 0.8, 0.5, 'ok', 0.7), m('b', null, 0.5, 'unavailable'), m('c', null, 5, 'skipped')]);
    expect(r.ctq).toBeCloseTo(0.8);
    expect(r.coverage).toBeCloseTo(0.5);
    expect(r.confidence).toBeCloseTo(0.35);
    expect(r.unavailable).toEqual(['b']);
  });
  it('null when nothing matched or all skipped (spec-decisions D14)', () => {
    expect(computeCtq([]).ctq).toBeNull();
    expect(computeCtq([m('a', null, 1, 'skipped')]).risk).toBeNull();
  });
});

describe('decideCtq', () => {
  it('maps risk through the thresholds', () => {
    expect(decideCtq([m('a', 0.9, 1)], th, { policy: 'allow_and_log' }).intervention).toBe('ok');
    expect(decideCtq([m('a', 0.5, 1)], th, { policy: 'allow_and_log' }).intervention).toBe('escalate');
    expect(decideCtq([m('a', 0.1, 1)], th, { policy: 'allow_and_log' }).intervention).toBe('block');
    expect(riskToIntervention(0.45, { ...th, flag: 0.5 })).toBe('flag');
  });
  it('unavailable scorers apply the fallback, never a made-up score', () => {
    const r = decideCtq([m('a', 0.95, 1), m('b', null, 1, 'unavailable')], th, { policy: 'allow_and_log' });
    expect(r.ctq).toBeCloseTo(0.95);
    expect(r.intervention).toBe('flag');
    expect(decideCtq([m('b', null, 1, 'unavailable')], th, { policy: 'deny' }).intervention).toBe('block');
    expect(decideCtq([m('b', null, 1, 'unavailable')], th, { policy: 'cached_decision', cached: 'nudge' }).intervention).toBe('nudge');
    // nothing cached yet: the tier's default (escalate from ACL-4, flag below)
    expect(decideCtq([m('b', null, 1, 'unavailable')], th, { policy: 'cached_decision', tier: 'ACL-4' }).intervention).toBe('escalate');
    expect(decideCtq([m('b', null, 1, 'unavailable')], th, { policy: 'cached_decision', tier: 'ACL-2' }).intervention).toBe('flag');
    // a worse CTQ result than the fallback wins
    expect(decideCtq([m('a', 0.1, 1), m('b', null, 1, 'unavailable')], th, { policy: 'allow_and_log' }).intervention).toBe('block');
  });
  it('tier default fallback: allow_and_log below ACL-4, escalate from ACL-4 (spec-decisions D5)', () => {
    expect(fallbackPolicy('ACL-3')).toBe('allow_and_log');
    expect(fallbackPolicy('ACL-4')).toBe('escalate');
    expect(fallbackPolicy('ACL-5', 'deny')).toBe('deny');
  });
});
