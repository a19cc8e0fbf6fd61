export { StewardClient, type StewardClientOptions, type ClientDecision, type RejectedInfo } from './steward-client.js';
export type { DecisionMessage, VerdictMessage, TrustDebtMessage } from '../adapters/kafka/messages.js';
