// The `acgp-steward/client` entry point: the agent SDK (publish traces, wait for decisions) over Kafka.
export { StewardClient, type ClientDecision, type ClientGateAnswer, type StewardClientOptions } from './steward-client.js';
export type { DecisionMessage, GateReplyMessage, RejectedInfo, TrustDebtMessage, VerdictMessage } from '../contracts/messages.js';
