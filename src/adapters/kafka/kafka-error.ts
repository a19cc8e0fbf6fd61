import { StewardError } from '../../errors.js';

/** A kafkajs error as STEWARD_KAFKA, retryable unless kafkajs marked it not retriable. */
export function kafkaError(e: unknown, what: string): StewardError {
  const msg = e instanceof Error ? e.message : String(e);
  const retriable = (e as { retriable?: boolean })?.retriable !== false;
  return new StewardError('STEWARD_KAFKA', `${what}: ${msg}`, { retryable: retriable, cause: e });
}
