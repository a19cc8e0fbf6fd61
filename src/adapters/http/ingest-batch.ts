/**
 * The batch ingest behind POST /v1/ingest/traces/batch and /v1/ingest/trace (docs/http.md "Ingest"): the batch's
 * idempotency keys claimed in one call while every event is mapped and validated (nothing is sent from a batch with
 * a bad event, and its claims are released), the unclaimed traces sent in one send, a failed send's claims released.
 */
import { StewardError } from '../../errors.js';
import type { AgentInfo, Trace } from '../../engine/types.js';
import { validateTrace } from '../kafka/serde.js';
import { acgpEventToTrace, type AcgpEvent } from './acgp-mapping.js';
import type { IdempotencyClaims } from '../redis/idempotency-claims.js';

export interface BatchIngestDeps {
  /** Produces a trace to acgp.traces, key = its agent id (StewardClient.publish). */
  publish(trace: Trace): Promise<void>;
  /**
   * Produces a batch's traces in one send (key = agent id, value = `json`, the trace's JSON text already made
   * for the size check); rejects when any is not acknowledged. Used instead of `publish` when present.
   */
  publishBatch?(items: readonly { trace: Trace; json: string }[]): Promise<void>;
  /**
   * Claims a batch's event keys for its agent in one round trip (true: claimed by this call, false: a duplicate;
   * '' names no key and always passes); release() hands back claims whose events were not produced.
   */
  idempotency?: IdempotencyClaims;
}

/** The answer to send: status, body, and a Retry-After header for a 503. */
export interface IngestAnswer {
  status: 200 | 422 | 503;
  body: Record<string, unknown>;
  retryAfter?: string;
}

/** The trace's JSON text, refused when over limits.max_trace_bytes (STEWARD_TRACE_TOO_LARGE). */
export function sizedTraceJson(trace: Trace, maxTraceBytes: number): string {
  const json = JSON.stringify(trace);
  // UTF-8 is at most 3 bytes per UTF-16 unit: the exact count only near the limit.
  const size = json.length * 3 <= maxTraceBytes ? json.length : Buffer.byteLength(json);
  if (size > maxTraceBytes) throw new StewardError('STEWARD_TRACE_TOO_LARGE', `trace is ${size} bytes as JSON, over limits.max_trace_bytes ${maxTraceBytes}`);
  return json;
}

export function batchIngest(deps: BatchIngestDeps, o: { maxTraceBytes: number; now: () => Date }) {
  return async (events: readonly AcgpEvent[], agent: AgentInfo, batchKey: string | undefined): Promise<IngestAnswer> => {
    // The claim goes out first and its round trip overlaps the mapping below (docs/spec-decisions.md D39): nothing
    // is sent before it answers, so a retried batch is still produced once; a batch refused for a bad event
    // releases what it claimed.
    const keys = events.map((ev, i) => ev.idempotency_key ?? (batchKey ? `${batchKey}:${i}` : ''));
    const claiming = deps.idempotency ? deps.idempotency.claim(agent.id, keys) : Promise.resolve(keys.map(() => true));
    // Map, validate and serialise each event in one pass; the JSON made for the size check is the record value.
    const traces: { trace: Trace; json: string }[] = new Array(events.length);
    let refused: IngestAnswer | undefined;
    for (let i = 0; i < events.length; i++) {
      try {
        const trace = validateTrace(acgpEventToTrace(events[i], agent.id, o.now));
        traces[i] = { trace, json: sizedTraceJson(trace, o.maxTraceBytes) };
      } catch (e) {
        const err = e as StewardError;
        refused = { status: 422, body: { error: err.code ?? 'STEWARD_TRACE_SCHEMA', message: err.message, index: i } };
        break;
      }
    }
    let claimed: boolean[];
    try {
      claimed = await claiming;
    } catch (e) {
      if (refused) return refused;
      throw e;
    }
    // Hands back the claims of events not produced, so a retry is not a duplicate.
    const release = (idx: readonly number[]) => (deps.idempotency && idx.length > 0 ? deps.idempotency.release(agent.id, idx.map((i) => keys[i])).catch(() => undefined) : undefined);
    if (refused) {
      await release(keys.flatMap((_, i) => (claimed[i] ? [i] : [])));
      return refused;
    }
    const fresh: number[] = [];
    for (let i = 0; i < claimed.length; i++) if (claimed[i]) fresh.push(i);
    let failed: number[];
    if (deps.publishBatch) {
      // One send for the batch (concurrent requests' sends merge further in the coalescing producer).
      const ok = fresh.length === 0 || (await deps.publishBatch(fresh.length === traces.length ? traces : fresh.map((i) => traces[i])).then(() => true, () => false));
      failed = ok ? [] : fresh;
    } else {
      const results = await Promise.allSettled(fresh.map((i) => deps.publish(traces[i].trace)));
      failed = fresh.filter((_, j) => results[j].status === 'rejected');
    }
    if (failed.length > 0) {
      await release(failed);
      return { status: 503, retryAfter: '2', body: { error: 'STEWARD_KAFKA', message: `${failed.length} of ${traces.length} events could not be produced to the traces topic; retry the batch` } };
    }
    return { status: 200, body: { accepted: fresh.length, duplicates: traces.length - fresh.length, ...(batchKey && { batch_id: batchKey }) } };
  };
}
