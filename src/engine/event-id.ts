import { hash } from 'node:crypto';

/**
 * Idempotency id of a trace's state effects (rate-limit hits, trust debt): its trace_id plus a digest of
 * the record's bytes. A redelivery (same bytes) is applied once; an agent that reuses a trace_id for a
 * different trace cannot pass it off as a redelivery to skip its rate limits or its debt. 128 bits of
 * SHA-256, so the agent cannot find a colliding second trace either.
 */
export function traceEventId(traceId: string, record: Buffer | null): string {
  return record === null ? traceId : `${traceId}#${hash('sha256', record, 'hex').slice(0, 32)}`;
}
