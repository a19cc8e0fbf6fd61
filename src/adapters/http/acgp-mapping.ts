/**
 * The acgp client's events → Steward traces (contracts C1), field by field as docs/http.md "Mapping" lists
 * them. Pure: the agent comes from the API key (docs/spec-decisions.md D24), never from the event.
 */
import type { SourceRef, Trace } from '../../engine/types.js';

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

const ZONED = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;
const DATE_T = /^\d{4}-\d{2}-\d{2}T/;

/**
 * `s` with a `Z` when it is a zone-less date-time (Python's datetime.now().isoformat() is read as UTC, docs/http.md),
 * unchecked: the mapped trace goes through validateTrace, whose date-time format is the one check.
 */
function utcForm(s: string): string {
  const t = s.trim();
  return DATE_T.test(t) && !ZONED.test(t) ? `${t}Z` : t;
}

/** Event fields the trace carries elsewhere (or drops): not copied into context.acgp. */
const MAPPED = new Set(['trace_id', 'reasoning_text', 'final_output', 'documents_used', 'timestamp', 'start_time', 'end_time', 'context_information', 'idempotency_key', 'agent_id', 'hook']);

/**
 * One acgp event as a trace of `agentId`. hook: `output` when the event carries a final_output, else `plan`
 * (a reasoning step); `hookOverride` is the decide/finalize routes' hook. `now` stands in for an event
 * without any time (the stage clamps every event time to the broker's, docs/security.md). The timestamp is
 * not checked here: every caller passes the trace to validateTrace (an unreadable one fails its date-time
 * format, STEWARD_TRACE_SCHEMA at /timestamp). Runs once per ingested event: one walk over the event's keys,
 * no intermediate arrays.
 */
export function acgpEventToTrace(ev: AcgpEvent, agentId: string, now: () => Date, hookOverride?: string): Trace {
  const fo = ev.final_output;
  const content = typeof fo === 'string' && fo !== '' ? fo : undefined;
  const when = nonEmpty(ev.timestamp) ?? nonEmpty(ev.end_time) ?? nonEmpty(ev.start_time);
  const ci = ev.context_information;
  const docs = Array.isArray(ev.documents_used) ? ev.documents_used : Array.isArray(ci?.documents_used) ? (ci!.documents_used as unknown[]) : undefined;
  let sources: SourceRef[] | undefined;
  if (docs) for (const d of docs) if (typeof d === 'string') (sources ??= []).push({ id: d });
  const acgp: Record<string, unknown> = {};
  for (const k in ev) {
    const v = ev[k];
    // '__proto__' would set acgp's prototype, not a field (Fastify's JSON parser refuses it anyway).
    if (v !== null && v !== undefined && !MAPPED.has(k) && k !== '__proto__') acgp[k] = v;
  }
  const trace: Trace = {
    trace_id: ev.trace_id,
    agent_id: agentId,
    timestamp: when !== undefined ? utcForm(when) : now().toISOString(),
    hook: hookOverride ?? (content !== undefined ? 'output' : 'plan'),
  };
  if (typeof ev.reasoning_text === 'string' && ev.reasoning_text !== '') trace.reasoning = ev.reasoning_text;
  if (content !== undefined) trace.content = content;
  if (sources) trace.sources = sources;
  trace.context = { ...ci, acgp };
  return trace;
}

const nonEmpty = (x: unknown): string | undefined => (typeof x === 'string' && x !== '' ? x : undefined);
