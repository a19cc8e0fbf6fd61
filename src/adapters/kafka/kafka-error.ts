import { StewardError } from '../../errors.js';

/** A kafkajs error as STEWARD_KAFKA, retryable unless kafkajs marked it not retriable. */
export function kafkaError(e: unknown, what: string): StewardError {
  const msg = e instanceof Error ? e.message : String(e);
  const retriable = (e as { retriable?: boolean })?.retriable !== false;
  return new StewardError('STEWARD_KAFKA', `${what}: ${msg}`, { retryable: retriable, cause: e });
}

const TOO_LARGE_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/**
 * True when the broker refused a produce because a record (batch) is too large: kafkajs MESSAGE_TOO_LARGE
 * or RECORD_LIST_TOO_LARGE, found on the error or its causes. Never retryable: the same bytes fail again.
 */
export function isMessageTooLarge(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur && typeof cur === 'object' && depth < 8; depth++) {
    const o = cur as { type?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };
    if (typeof o.type === 'string' && TOO_LARGE_TYPES.has(o.type)) return true;
    if (Array.isArray(o.errors) && o.errors.some((x) => isMessageTooLarge(x))) return true;
    cur = o.cause ?? o.originalError;
  }
  return false;
}

const FENCED_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

/**
 * True when a transactional producer was fenced: another producer initialised the same transactional id (a new
 * owner of the partition), found on the error or its causes. The producer cannot be used again.
 */
export function isFenced(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur && typeof cur === 'object' && depth < 8; depth++) {
    const o = cur as { type?: unknown; cause?: unknown; originalError?: unknown };
    if (typeof o.type === 'string' && FENCED_TYPES.has(o.type)) return true;
    cur = o.cause ?? o.originalError;
  }
  return false;
}

const REBALANCE_TYPES = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID']);

/**
 * True when a heartbeat failed because the group is rebalancing or this member is no longer in its generation:
 * the partitions may be handed to another member, so a handler holding them should finish what it has and return.
 */
export function isRebalance(e: unknown): boolean {
  return typeof (e as { type?: unknown })?.type === 'string' && REBALANCE_TYPES.has((e as { type: string }).type);
}

