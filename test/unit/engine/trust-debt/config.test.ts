import { describe, expect, it } from 'vitest';
import { DEFAULT_TRUST_DEBT_CONFIG, accumulationFor, crossingsBetween, levelActions, levelFor, trustDebtConfigFrom } from '../../../../src/engine/trust-debt/index.js';

describe('trustDebtConfigFrom (§10.1)', () => {
  it('returns the spec defaults for a missing block', () => {
    const c = trustDebtConfigFrom(undefined);
    expect(c).toEqual(DEFAULT_TRUST_DEBT_CONFIG);
    expect(c.accumulation.escalate).toBeUndefined();
    expect(c.decay).toEqual({ rate: 0.95, periodHours: 24, minDebt: 0 });
  });

  it('merges an authored snake_case block over the defaults', () => {
    const c = trustDebtConfigFrom({
      accumulation: { escalate: 0.03, block: 0.2 },
      decay: { period_hours: 12 },
      recovery: { good_behavior_audit: { threshold_hours: 72 }, agent_remediation_request: false },
      thresholds: { restricted_mode: 0.4 },
      severity_weights: { catastrophic: 10 },
    });
    expect(c.accumulation).toEqual({ flag: 0.05, nudge: 0.02, block: 0.2, halt: 0.5, escalate: 0.03 });
    expect(c.decay).toEqual({ rate: 0.95, periodHours: 12, minDebt: 0 });
    expect(c.recovery.goodBehaviorAudit).toEqual({ thresholdHours: 72, credit: -0.2 });
    expect(c.recovery.agentRemediationRequest).toBe(false);
    expect(c.thresholds.restrictedMode).toBe(0.4);
    expect(c.severityWeights).toEqual({ standard: 1, critical: 2, severe: 5, catastrophic: 10 });
    expect(DEFAULT_TRUST_DEBT_CONFIG.accumulation.block).toBe(0.15);
  });

  it.each([
    [{ decay: { rate: 1.5 } }, '$.trust_debt.decay.rate'],
    [{ decay: { period_hours: 0 } }, '$.trust_debt.decay.period_hours'],
    [{ recovery: { successful_review_credit: 0.1 } }, '$.trust_debt.recovery.successful_review_credit'],
    [{ accumulation: { bogus: 0.1 } }, '$.trust_debt.accumulation.bogus'],
    [{ thresholds: { elevated_monitoring: 0.8 } }, '$.trust_debt.thresholds'],
    [{ enabled: 'yes' }, '$.trust_debt.enabled'],
    ['nope', '$.trust_debt'],
  ])('rejects %j at %s', (authored, path) => {
    expect(() => trustDebtConfigFrom(authored)).toThrow(expect.objectContaining({ code: 'STEWARD_BLUEPRINT_INVALID', position: { path } }));
  });
});

describe('levels and weights (§10.5, §10.6)', () => {
  const cfg = DEFAULT_TRUST_DEBT_CONFIG;
  it('levels are reached at the threshold value', () => {
    expect(levelFor(0.2999, cfg)).toBe('normal');
    expect(levelFor(0.3, cfg)).toBe('elevated_monitoring');
    expect(levelFor(0.5, cfg)).toBe('restricted_mode');
    expect(levelFor(0.75, cfg)).toBe('re_tiering_review');
  });
  it('severe block is 0.75; no severity uses the standard weight', () => {
    expect(accumulationFor('block', 'severe', cfg)).toBeCloseTo(0.75, 15);
    expect(accumulationFor('block', undefined, trustDebtConfigFrom({ severity_weights: { standard: 2 } }))).toBe(0.3);
    expect(accumulationFor('ok', 'severe', cfg)).toBe(0);
  });
  it('crossings list every threshold passed, in order', () => {
    expect(crossingsBetween('re_tiering_review', 'elevated_monitoring')).toEqual([
      { threshold: 're_tiering_review', direction: 'down' },
      { threshold: 'restricted_mode', direction: 'down' },
    ]);
    expect(crossingsBetween('normal', 'normal')).toEqual([]);
  });
});

describe('threshold actions (§10.6)', () => {
  it('each level adds its action to the ones below', () => {
    expect(levelActions('normal')).toEqual({ fullScoring: false, traceLogLevel: 'debug', restricted: false, reTieringReview: false });
    expect(levelActions('elevated_monitoring')).toEqual({ fullScoring: true, traceLogLevel: 'info', restricted: false, reTieringReview: false });
    expect(levelActions('restricted_mode')).toMatchObject({ fullScoring: true, restricted: true, reTieringReview: false });
    expect(levelActions('re_tiering_review')).toMatchObject({ fullScoring: true, restricted: true, reTieringReview: true });
  });
});
