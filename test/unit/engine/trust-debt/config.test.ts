import { describe, expect, it } from 'vitest';
import { DEFAULT_TRUST_DEBT_CONFIG, accumulationFor, auditEnabled, compileTrustDebt, crossingsBetween, levelActions, levelFor, trustDebtConfigFrom } from '../../../../src/engine/trust-debt/index.js';

describe('trustDebtConfigFrom (§10.1)', () => {
  it('returns the spec defaults for a missing block', () => {
    const c = trustDebtConfigFrom(undefined);
    expect(c).toEqual(DEFAULT_TRUST_DEBT_CONFIG);
    expect(c.accumulation.escalate).toBeUndefined();
    expect(c.decay).toEqual({ rate: 0.95, periodHours: 24, minDebt: 0 });
  });

  it('the good-behaviour audit is opt-in: off without a good_behavior_audit block (after inheritance)', () => {
    expect(auditEnabled(DEFAULT_TRUST_DEBT_CONFIG)).toBe(false);
    expect(auditEnabled(trustDebtConfigFrom(undefined))).toBe(false);
    expect(auditEnabled(trustDebtConfigFrom({ recovery: { successful_review_credit: -0.2 } }))).toBe(false);
    expect(DEFAULT_TRUST_DEBT_CONFIG.recovery.goodBehaviorAudit).toEqual({ thresholdHours: 0, credit: -0.2 });
    // configured: the §10.1 example values fill what the block leaves out
    expect(trustDebtConfigFrom({ recovery: { good_behavior_audit: {} } }).recovery.goodBehaviorAudit).toEqual({ thresholdHours: 168, credit: -0.2 });
    expect(auditEnabled(trustDebtConfigFrom({ recovery: { good_behavior_audit: {} } }))).toBe(true);
    expect(auditEnabled(trustDebtConfigFrom({ recovery: { good_behavior_audit: { credit: 0 } } }))).toBe(false);
    expect(auditEnabled(trustDebtConfigFrom({ recovery: { enabled: false, good_behavior_audit: {} } }))).toBe(false);
    expect(auditEnabled(trustDebtConfigFrom({ enabled: false, recovery: { good_behavior_audit: {} } }))).toBe(false);
    // review and remediation credits keep their defaults: they act only on explicit review events
    expect(trustDebtConfigFrom(undefined).recovery).toMatchObject({ enabled: true, successfulReviewCredit: -0.1, agentRemediationRequest: true });
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
    [{ decay: { rate: 0 } }, '$.trust_debt.decay.rate'],
    [{ decay: { min_debt: 1.5 } }, '$.trust_debt.decay.min_debt'],
    [{ decay: { period_hours: -24 } }, '$.trust_debt.decay.period_hours'],
    [{ recovery: { good_behavior_audit: { threshold_hours: 0 } } }, '$.trust_debt.recovery.good_behavior_audit.threshold_hours'],
    [{ recovery: { good_behavior_audit: { credit: 0.2 } } }, '$.trust_debt.recovery.good_behavior_audit.credit'],
    [{ thresholds: { restricted_mode: -0.1 } }, '$.trust_debt.thresholds.restricted_mode'],
    [{ severity_weights: { severe: -1 } }, '$.trust_debt.severity_weights.severe'],
    [{ enabled: 'yes' }, '$.trust_debt.enabled'],
    ['nope', '$.trust_debt'],
  ])('rejects %j at %s', (authored, path) => {
    expect(() => trustDebtConfigFrom(authored)).toThrow(expect.objectContaining({ code: 'STEWARD_BLUEPRINT_INVALID', position: { path } }));
  });

  it.each([
    // with the defaults .30/.50/.75 filled in, one authored key can break the order
    [{ thresholds: { re_tiering_review: 0.4 } }, '$.trust_debt.thresholds.re_tiering_review', "'re_tiering_review' (0.4) must be >= 'restricted_mode' (0.5, default)"],
    [{ thresholds: { elevated_monitoring: 0.8 } }, '$.trust_debt.thresholds.elevated_monitoring', "'elevated_monitoring' (0.8) must be <= 'restricted_mode' (0.5, default)"],
    [{ thresholds: { restricted_mode: 0.2 } }, '$.trust_debt.thresholds.restricted_mode', "'restricted_mode' (0.2) must be >= 'elevated_monitoring' (0.3, default)"],
    [{ thresholds: { restricted_mode: 0.6, re_tiering_review: 0.55 } }, '$.trust_debt.thresholds.re_tiering_review', "'re_tiering_review' (0.55) must be >= 'restricted_mode' (0.6)"],
  ])('rejects unordered effective thresholds %j', (authored, path, message) => {
    expect(() => trustDebtConfigFrom(authored)).toThrow(expect.objectContaining({ code: 'STEWARD_BLUEPRINT_THRESHOLD_ORDER', position: { path } }));
    expect(() => trustDebtConfigFrom(authored)).toThrow(message);
  });

  it('accepts equal thresholds and an order that holds with the defaults', () => {
    expect(trustDebtConfigFrom({ thresholds: { elevated_monitoring: 0.5, re_tiering_review: 0.5 } }).thresholds).toEqual({ elevatedMonitoring: 0.5, restrictedMode: 0.5, reTieringReview: 0.5 });
    expect(trustDebtConfigFrom({ thresholds: { re_tiering_review: 0.9 } }).thresholds.reTieringReview).toBe(0.9);
  });

  it('compileTrustDebt reports every problem and still returns a usable config (invalid values → defaults)', () => {
    const { config, problems } = compileTrustDebt({ decay: { rate: 2 }, thresholds: { elevated_monitoring: 0.9, re_tiering_review: 0.4 } });
    expect(problems.map((p) => [p.code, p.path.join('.')])).toEqual([
      ['STEWARD_BLUEPRINT_INVALID', 'decay.rate'],
      ['STEWARD_BLUEPRINT_THRESHOLD_ORDER', 'thresholds.elevated_monitoring'],
      ['STEWARD_BLUEPRINT_THRESHOLD_ORDER', 'thresholds.re_tiering_review'],
    ]);
    expect(config.decay.rate).toBe(0.95);
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
