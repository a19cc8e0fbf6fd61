// The acgp.* wire contracts: one definition per message, and the conversions from the engine's records.
export type {
  CheckOutcome,
  DecisionMessage,
  RejectedInfo,
  ReplyRoute,
  ReviewMessage,
  RuleCheckOutcome,
  ScoringMessage,
  TrustDebtMessage,
  VerdictMessage,
} from './messages.js';
export { MAX_REJECT_MESSAGE, rejectedDecision } from './messages.js';
export { decisionInputOf, decisionMessage, verdictMessage } from './engine-records.js';
export { policyDecisionDraft, policyDecisionEntryId, type PolicyDecisionInput } from './policy-decision.js';
export { DECISION_FIELDS, LEDGER_ENTRY_FIELDS, TRACE_FIELDS, TRUST_DEBT_FIELDS, VERDICT_FIELDS, type KnownKeys } from './fields.js';
export { RUN_ANSWER_FIELDS, RUN_PENDING_FIELDS, type RunAnswerMessage, type RunPendingMessage } from './run-records.js';
