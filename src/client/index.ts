// The `acgp-steward/client` entry point: the agent SDK (publish traces, wait for decisions) over Kafka.
export { DEFAULT_FINALIZE_TIMEOUT_MS, finalizeTimeoutFor, StewardClient, type ClientDecision, type ClientGateAnswer, type StewardClientOptions } from './steward-client.js';
export type { ApprovalWaitOptions } from './approval-wait.js';
export type { ApprovalOutcome } from '../engine/approvals/outcome.js';
export type { DecisionMessage, GateReplyMessage, RejectedInfo, TrustDebtMessage, VerdictMessage } from '../contracts/messages.js';
