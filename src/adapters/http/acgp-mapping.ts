/**
 * The acgp client's events → Steward traces (contracts C1), field by field as docs/http.md "Mapping" lists
 * them. Pure: the agent comes from the API key (docs/spec-decisions.md D24), never from the event.
 */
import { StewardError } from '../../errors.js';
import type { SourceRef, Trace } from '../../engine/types.js';
import { isTimestamp } from '../../engine/time.js';

/** What the acgp 0.1.4 client sends per event (client.trace() and TraceContext); unknown fields are kept in context. */
export interface AcgpEvent {
  trace_id: string;
  agent_type?: string;
  agent_tag?: string;
  goal?: string;
  user_query?: string;
  reasoning_text?: string | null;
  final_output?: string | null;
  output_type?: string | null;
  context_information?: Record<string, unknown> | null;
  documents_used?: string[] | null;
  similarity_scores?: number[] | null;
  timestamp?: string | null;
  start_time?: string | null;
  end_time?: string | null;
  had_error?: boolean;
  idempotency_key?: string;
  [k: string]: unknown;
}

/** Zone-less ISO times (Python's datetime.now().isoformat()) are read as UTC (docs/http.md). */
export function utcTimestamp(s: string): string {
  const t = s.trim();
  const zoned = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/.test(t);
  const out = /^\d{4}-\d{2}-\d{2}T/.test(t) && !zoned ? `${t}Z` : t;
  if (!isTimestamp(out)) throw new StewardError('STEWARD_TRACE_SCHEMA', `trace invalid at /timestamp: not an ISO-8601 time (${JSON.stringify(s.slice(0, 40))})`);
  return out;
}

const MAPPED = new Set(['trace_id', 'reasoning_text', 'final_output', 'documents_used', 'timestamp', 'start_time', 'end_time', 'context_information', 'idempotency_key', 'agent_id', 'hook']);

/**
 * One acgp event as a trace of `agentId`. hook: `output` when the event carries a final_output, else `plan`
 * (a reasoning step); `hookOverride` is the decide/finalize routes' hook. `now` stands in for an event
 * without any time (the stage clamps every event time to the broker's, docs/security.md).
 */
export function acgpEventToTrace(ev: AcgpEvent, agentId: string, now: () => Date, hookOverride?: string): Trace {
  const content = typeof ev.final_output === 'string' && ev.final_output !== '' ? ev.final_output : undefined;
  const when = [ev.timestamp, ev.end_time, ev.start_time].find((x): x is string => typeof x === 'string' && x !== '');
  const docs = Array.isArray(ev.documents_used) ? ev.documents_used : Array.isArray(ev.context_information?.documents_used) ? (ev.context_information!.documents_used as unknown[]) : undefined;
  const sources: SourceRef[] | undefined = docs?.filter((d): d is string => typeof d === 'string').map((id) => ({ id }));
  const acgp: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(ev)) if (!MAPPED.has(k) && v !== null && v !== undefined) acgp[k] = v;
  const trace: Trace = {
    trace_id: ev.trace_id,
    agent_id: agentId,
    timestamp: when ? utcTimestamp(when) : now().toISOString(),
    hook: hookOverride ?? (content !== undefined ? 'output' : 'plan'),
    ...(typeof ev.reasoning_text === 'string' && ev.reasoning_text !== '' && { reasoning: ev.reasoning_text }),
    ...(content !== undefined && { content }),
    ...(sources && sources.length > 0 && { sources }),
    context: { ...(ev.context_information ?? {}), acgp },
  };
  return trace;
}
