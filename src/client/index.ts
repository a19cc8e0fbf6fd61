export { StewardClient, type StewardClientOptions } from './steward-client.js';
export type { DecisionMessage, VerdictMessage, TrustDebtMessage } from '../adapters/kafka/messages.js';
