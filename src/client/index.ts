export { StewardClient, type StewardClientOptions, type ClientDecision } from './steward-client.js';
export type { DecisionMessage, RejectedInfo, VerdictMessage, TrustDebtMessage } from '../contracts/messages.js';
