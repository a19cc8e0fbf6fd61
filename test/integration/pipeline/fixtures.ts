import type { TrustDebtConfig } from '../../../src/engine/types.js';

// ACGP-1004 §10 defaults (spec-decisions D7), for tests that do not load blueprints.
export const DEFAULT_TRUST_DEBT_CONFIG_FOR_TESTS: TrustDebtConfig = {
  enabled: true,
  accumulation: { flag: 0.05, nudge: 0.02, block: 0.15, halt: 0.5, escalate: 0 },
  decay: { rate: 0.95, periodHours: 24, minDebt: 0 },
  recovery: { enabled: true, successfulReviewCredit: 0.1, goodBehaviorAudit: { thresholdHours: 168, credit: 0.05 }, agentRemediationRequest: true },
  thresholds: { elevatedMonitoring: 0.2, restrictedMode: 0.4, reTieringReview: 0.6 },
  severityWeights: { standard: 1, critical: 1.5, severe: 2 },
};
