// The `acgp-steward/client` entry point: the agent SDK (publish traces, wait for decisions) over Kafka.
export { StewardClient, type ClientDecision, type StewardClientOptions } from './steward-client.js';
export type { DecisionMessage, RejectedInfo, TrustDebtMessage, VerdictMessage } from '../contracts/messages.js';
