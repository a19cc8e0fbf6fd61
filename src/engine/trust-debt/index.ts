/**
 * Trust debt (ACGP-1004 §10): the contract other modules consume. Pure: stores that do I/O live in
 * src/adapters/redis (RedisTrustDebtStore) and implement the same `TrustDebtStore`.
 */
export { DEFAULT_TRUST_DEBT_CONFIG, GOOD_BEHAVIOR_AUDIT_EXAMPLE, compileTrustDebt, trustDebtConfigForAgent, trustDebtConfigFrom, type TrustDebtProblem } from './config.js';
export {
  DEBT_PRECISION,
  HOUR_MS,
  LEVELS,
  accumulationFor,
  advance,
  applyDecay,
  auditEnabled,
  asCredit,
  combine,
  crossingsBetween,
  debtAt,
  decayBetween,
  detExp,
  detExpm1,
  detLn,
  detPow,
  initialState,
  levelActions,
  levelFor,
  levelRank,
  maxLevel,
  roundDebt,
  runAudits,
  type AgentDebtState,
  type Crossing,
  type LevelActions,
  type StepChange,
  type StepInput,
  type ThresholdName,
} from './math.js';
export {
  auditEventId,
  causeOf,
  deltaFor,
  remediationEventId,
  resetsWindow,
  type RemediationDecision,
  type RemediationRequest,
  type RemediationStatus,
  type RetierRequest,
  type TrustDebtChange,
  type TrustDebtEvent,
  type TrustDebtEventKind,
  type TrustDebtStore,
} from './store.js';
export { MemoryTrustDebtStore, assertRemediationAllowed, remediationError } from './memory-store.js';
