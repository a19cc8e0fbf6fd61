/**
 * Mappers from what the sink consumes (Kafka JSON) to ClickHouse rows (types and column specs: tables.ts).
 * They validate and throw STEWARD_SINK_RECORD (non-retryable) for a record that cannot become a row: the
 * sink dead-letters it instead of retrying.
 */
import { StewardError } from '../../errors.js';
import { canonicalize, type LedgerEntry } from '../../engine/ledger/index.js';
import { parseTimestamp } from '../../engine/time.js';
import { FIX_MODES, GATE_ACTIONS, VERDICTS } from '../../engine/gate/codes.js';
import type { DecisionRow, DlqMeta, DlqRow, GateJudgeResultRow, GateOutcomeRow, GateRow, LedgerRow, TrustDebtRow, VerdictRow } from './tables.js';

export * from './tables.js';

// ───────────────────────────── mappers ─────────────────────────────

function bad(what: string): never {
  throw new StewardError('STEWARD_SINK_RECORD', what, { retryable: false });
}

function obj(m: unknown, kind: string): Record<string, unknown> {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) bad(`${kind}: not a JSON object`);
  return m as Record<string, unknown>;
}

function str(o: Record<string, unknown>, k: string, kind: string, required = true): string {
  const v = o[k];
  if (typeof v === 'string' && (v.length > 0 || !required)) return v;
  if (v === undefined || v === null) return required ? bad(`${kind}: ${k} is required`) : '';
  return required ? bad(`${kind}: ${k} must be a string`) : String(v);
}

/** A finite number (numeric strings accepted); the error names `kind: field` (built only on failure). */
function num(v: unknown, kind: string, field?: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) bad(`${field === undefined ? kind : `${kind}: ${field}`} must be a finite number`);
  return n;
}

/** Epoch ms from `<ms field>` or an ISO `timestamp`; UInt64 columns cannot take negatives. */
function timeMs(o: Record<string, unknown>, msKeys: readonly string[], kind: string, fallback?: number): number {
  for (let i = 0; i < msKeys.length; i++) {
    const k = msKeys[i];
    const v = o[k];
    if (v === undefined || v === null) continue;
    if (typeof v === 'number' && v >= 0 && Number.isFinite(v)) return Math.trunc(v);
    return clampMs(num(v, kind, k), `${kind}: ${k}`);
  }
  if (typeof o.timestamp === 'string') {
    const t = parseTimestamp(o.timestamp);
    if (!Number.isNaN(t)) return clampMs(t, `${kind}: timestamp`);
  }
  if (fallback !== undefined) return fallback;
  return bad(`${kind}: ${msKeys[0]} is required`);
}

// Field lists of timeMs, allocated once.
const EVENT_TIME_KEYS: readonly string[] = ['event_time_ms'];
const DECIDED_AT_KEYS: readonly string[] = ['decided_at_ms'];
const SCORED_AT_KEYS: readonly string[] = ['scored_at_ms'];
const TRUST_DEBT_TIME_KEYS: readonly string[] = ['ts_ms', 'at_ms'];
const GATE_TIME_KEYS: readonly string[] = ['event_time_ms', 'ts_ms', 'decided_at_ms'];

function clampMs(n: number, what: string): number {
  if (n < 0) bad(`${what} must not be negative`);
  return Math.trunc(n);
}

/** The array itself when it holds only strings (the parsed message is ours), else a copy with the rest as JSON. */
const strings = (v: unknown): string[] => {
  if (!Array.isArray(v)) return [];
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== 'string') return v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
  return v as string[];
};
/** String(id) of the entries whose `key` is exactly `want` (one pass, no intermediate array). */
function idsWhere(list: readonly { id?: unknown; fired?: unknown; passed?: unknown }[], key: 'fired' | 'passed', want: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < list.length; i++) {
    const t = list[i];
    if (t?.[key] === want) out.push(String(t.id));
  }
  return out;
}
const flag = (v: unknown): number => (v === true ? 1 : 0);
const APPROVED = new Set(['ok', 'nudge', 'flag']);

export function decisionRow(m: unknown, ingestedAtMs: number): DecisionRow {
  const o = obj(m, 'decision');
  const k = 'decision';
  const tripwires = Array.isArray(o.tripwires) ? (o.tripwires as { id?: unknown; fired?: unknown }[]) : [];
  const rules = Array.isArray(o.rules) ? (o.rules as { id?: unknown; passed?: unknown }[]) : [];
  const intervention = str(o, 'intervention', k);
  const eventTime = timeMs(o, EVENT_TIME_KEYS, k, typeof o.decided_at_ms === 'number' ? Math.trunc(o.decided_at_ms) : undefined);
  return {
    trace_id: str(o, 'trace_id', k),
    agent_id: str(o, 'agent_id', k),
    tenant: str(o, 'tenant', k, false),
    blueprint: str(o, 'blueprint', k, false),
    intervention,
    approved: typeof o.approved === 'boolean' ? flag(o.approved) : APPROVED.has(intervention) ? 1 : 0,
    stage: str(o, 'stage', k, false),
    halted: flag(o.halted),
    severity: str(o, 'severity', k, false),
    reasons: strings(o.reasons),
    tripwires_fired: idsWhere(tripwires, 'fired', true),
    rules_failed: idsWhere(rules, 'passed', false),
    // Native JSON.stringify: one flat string. A hand-rolled serialiser (fewer µs per call in isolation) built
    // cons-string trees that the TSV escape check then flattened again: ~0.9 KB of garbage per row, and the
    // whole mapping path measured ~1 µs/row slower with it (23 % more scavenges).
    tripwires_json: JSON.stringify(tripwires),
    rules_json: JSON.stringify(rules),
    latency_ms: o.latency_ms === undefined ? 0 : num(o.latency_ms, k, 'latency_ms'),
    event_time_ms: eventTime,
    decided_at_ms: timeMs(o, DECIDED_AT_KEYS, k, eventTime),
    hook: str(o, 'hook', k, false),
    tool: str(o, 'tool', k, false),
    session_id: str(o, 'session_id', k, false),
    engine_version: str(o, 'engine_version', k, false),
    fallback: flag(o.fallback),
    blueprint_version: str(o, 'blueprint_version', k, false),
    rollout_arm: str(o, 'rollout_arm', k, false),
    ingested_at_ms: ingestedAtMs,
  };
}

function signatureText(v: Record<string, unknown>): string {
  const meta = (v.metadata ?? {}) as Record<string, unknown>;
  const s = v.signature ?? meta.signature;
  return s === undefined || s === null ? '' : typeof s === 'string' ? s : JSON.stringify(s);
}

export function verdictRow(m: unknown, ingestedAtMs: number): VerdictRow {
  const o = obj(m, 'verdict');
  const k = 'verdict';
  const v = obj(o.verdict, 'verdict.verdict');
  const metrics = Array.isArray(o.metrics) ? (o.metrics as Record<string, unknown>[]) : [];
  const intervention = str(o, 'intervention', k);
  const nullable = (x: unknown, field: string) => (x === null || x === undefined ? null : num(x, k, field));
  const eventTime = timeMs(o, EVENT_TIME_KEYS, k, typeof o.scored_at_ms === 'number' ? Math.trunc(o.scored_at_ms) : undefined);
  const meta = (v.metadata ?? {}) as Record<string, unknown>;
  return {
    trace_id: str(o, 'trace_id', k),
    agent_id: str(o, 'agent_id', k),
    tenant: typeof o.tenant === 'string' ? o.tenant : typeof meta.tenant_id === 'string' ? meta.tenant_id : '',
    blueprint: str(o, 'blueprint', k, false),
    intervention,
    approved: typeof o.approved === 'boolean' ? flag(o.approved) : typeof v.approved === 'boolean' ? flag(v.approved) : APPROVED.has(intervention) ? 1 : 0,
    stage: str(o, 'stage', k, false),
    ctq: nullable(o.ctq, 'ctq'),
    risk: nullable(o.risk, 'risk'),
    confidence: v.confidence_score === undefined ? 0 : num(v.confidence_score, k, 'verdict.confidence_score'),
    policy_violations: strings(v.policy_violations),
    metric_names: metrics.map((x) => String(x?.name ?? '')),
    // null marks "no score" (unavailable/skipped) so the arrays stay aligned; status says why.
    metric_scores: metrics.map((x) => (typeof x?.score === 'number' && Number.isFinite(x.score) ? x.score : null)),
    metric_statuses: metrics.map((x) => String(x?.status ?? '')),
    metrics_json: JSON.stringify(metrics),
    verdict_json: JSON.stringify(v),
    signature: signatureText(v),
    event_time_ms: eventTime,
    scored_at_ms: timeMs(o, SCORED_AT_KEYS, k, eventTime),
    ingested_at_ms: ingestedAtMs,
  };
}

export function trustDebtRow(m: unknown, ingestedAtMs: number): TrustDebtRow {
  const o = obj(m, 'trust-debt event');
  const k = 'trust-debt event';
  const crossings = Array.isArray(o.crossings)
    ? (o.crossings as unknown[]).map((c) =>
        typeof c === 'string' ? c : `${String((c as { threshold?: unknown })?.threshold)}:${String((c as { direction?: unknown })?.direction)}`,
      )
    : [];
  return {
    event_id: str(o, 'event_id', k),
    tenant: str(o, 'tenant', k, false),
    agent_id: str(o, 'agent_id', k),
    ts_ms: timeMs(o, TRUST_DEBT_TIME_KEYS, k),
    cause: str(o, 'cause', k, false),
    before: num(o.before, k, 'before'),
    after: num(o.after, k, 'after'),
    level: str(o, 'level', k),
    previous_level: str(o, 'previous_level', k, false),
    crossings,
    trace_id: str(o, 'trace_id', k, false),
    ingested_at_ms: ingestedAtMs,
  };
}

export function gateRow(m: unknown, ingestedAtMs: number): GateRow {
  const o = obj(m, 'gate result');
  const k = 'gate result';
  const intervention = str(o, 'intervention', k, false);
  return {
    trace_id: str(o, 'trace_id', k),
    agent_id: str(o, 'agent_id', k),
    tenant: str(o, 'tenant', k, false),
    intervention,
    approved: typeof o.approved === 'boolean' ? flag(o.approved) : APPROVED.has(intervention) ? 1 : 0,
    ts_ms: timeMs(o, GATE_TIME_KEYS, k),
    payload: JSON.stringify(o),
    ingested_at_ms: ingestedAtMs,
  };
}

// ───────────── finalization gate §9.13 events (docs/analytics.md "Finalization gate") ─────────────

const GATE_EVENT_TIME_KEYS: readonly string[] = ['ts_ms'];
const VERDICT_SET: ReadonlySet<string> = new Set(VERDICTS);
const FIX_MODE_SET: ReadonlySet<string> = new Set(FIX_MODES);
const ACTION_SET: ReadonlySet<string> = new Set(GATE_ACTIONS);
const FINAL_VERDICTS: ReadonlySet<string> = new Set(['pass', 'caveats', 'fail']);
const FEEDBACK: ReadonlySet<string> = new Set(['up', 'down']);

/** A string field that is absent/null ('') or one of `allowed`. */
function oneOf(o: Record<string, unknown>, k: string, kind: string, allowed: ReadonlySet<string>, required: boolean): string {
  const v = o[k];
  if ((v === undefined || v === null) && !required) return '';
  if (typeof v !== 'string' || !allowed.has(v)) bad(`${kind}: ${k} must be one of ${[...allowed].join(', ')}${required ? '' : ' or null'}`);
  return v;
}

/** A whole number ≥ 0 (UInt32/UInt64 columns). */
function count(v: unknown, kind: string, field: string, max = Number.MAX_SAFE_INTEGER): number {
  const n = num(v, kind, field);
  if (!Number.isInteger(n) || n < 0 || n > max) bad(`${kind}: ${field} must be a whole number from 0 to ${max}`);
  return n;
}

function nullableNum(v: unknown, kind: string, field: string): number | null {
  if (v === undefined || v === null) return null;
  const n = num(v, kind, field);
  if (n < 0) bad(`${kind}: ${field} must not be negative`);
  return n;
}

function stringArray(v: unknown, kind: string, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) bad(`${kind}: ${field} must be an array of strings`);
  return v as string[];
}

/** The columns of a gate event's envelope (GateEventEnvelope), shared by both gate tables. */
function gateEnvelope(o: Record<string, unknown>, k: string) {
  return {
    event_id: str(o, 'event_id', k),
    trace_id: str(o, 'trace_id', k),
    job_id: str(o, 'job_id', k),
    agent_id: str(o, 'agent_id', k),
    tenant: str(o, 'tenant', k, false),
    session_id: str(o, 'session_id', k, false),
    intent_id: str(o, 'intent_id', k, false),
  };
}

/** `final_alignment_judge_result` (FinalAlignmentJudgeResultEvent) → gate_judge_results. */
export function gateJudgeResultRow(m: unknown, ingestedAtMs: number): GateJudgeResultRow {
  const k = 'final_alignment_judge_result';
  const o = obj(m, k);
  if (o.degraded !== undefined && typeof o.degraded !== 'boolean') bad(`${k}: degraded must be a boolean`);
  return {
    ...gateEnvelope(o, k),
    user_id_hash: str(o, 'user_id_hash', k, false),
    capability_profile_id: str(o, 'capability_profile_id', k, false),
    skill_id: str(o, 'skill_id', k, false),
    quality_score: o.quality_score === undefined || o.quality_score === null ? null : num(o.quality_score, k, 'quality_score'),
    verdict: oneOf(o, 'verdict', k, VERDICT_SET, false),
    reason_codes: stringArray(o.reason_codes, k, 'reason_codes'),
    fix_mode: oneOf(o, 'fix_mode', k, FIX_MODE_SET, false),
    attempt_index: count(o.attempt_index, k, 'attempt_index', 4_294_967_295),
    action: oneOf(o, 'action', k, ACTION_SET, true),
    judged_by: str(o, 'judged_by', k, false),
    degraded: flag(o.degraded),
    model_id: str(o, 'model_id', k, false),
    token_cost: nullableNum(o.token_cost, k, 'token_cost'),
    latency_ms: nullableNum(o.latency_ms, k, 'latency_ms') ?? 0,
    ts_ms: timeMs(o, GATE_EVENT_TIME_KEYS, k),
    ingested_at_ms: ingestedAtMs,
  };
}

/** `finalization_outcome` (FinalizationOutcomeEvent) → gate_outcomes; a row with feedback outranks one without. */
export function gateOutcomeRow(m: unknown, ingestedAtMs: number): GateOutcomeRow {
  const k = 'finalization_outcome';
  const o = obj(m, k);
  const feedback = oneOf(o, 'user_feedback', k, FEEDBACK, false);
  return {
    ...gateEnvelope(o, k),
    final_verdict: oneOf(o, 'final_verdict', k, FINAL_VERDICTS, true),
    action: oneOf(o, 'action', k, ACTION_SET, true),
    num_retries: count(o.num_retries, k, 'num_retries', 4_294_967_295),
    time_to_finalize_ms: o.time_to_finalize_ms === undefined || o.time_to_finalize_ms === null ? 0 : Math.trunc(nullableNum(o.time_to_finalize_ms, k, 'time_to_finalize_ms') ?? 0),
    user_feedback: feedback,
    ts_ms: timeMs(o, GATE_EVENT_TIME_KEYS, k),
    feedback_at_ms: feedback === '' ? 0 : ingestedAtMs,
    ingested_at_ms: ingestedAtMs,
  };
}

/** The acgp.gate record's typed table by its `event` field; undefined for any other record (gate_events only). */
export function gateEventTable(m: unknown): 'gate_judge_results' | 'gate_outcomes' | undefined {
  const e = typeof m === 'object' && m !== null ? (m as { event?: unknown }).event : undefined;
  return e === 'final_alignment_judge_result' ? 'gate_judge_results' : e === 'finalization_outcome' ? 'gate_outcomes' : undefined;
}

export function dlqRow(d: DlqMeta, ingestedAtMs: number): DlqRow {
  const offset = Number(d.dlq_offset);
  const ms = (v: number | undefined) => (v !== undefined && Number.isFinite(v) && v >= 0 ? Math.trunc(v) : undefined);
  const known = !!d.source_topic && d.source_offset !== undefined;
  const failedAt = ms(d.failed_at_ms) ?? Math.max(0, Math.trunc(d.timestamp_ms));
  return {
    dlq_topic: d.dlq_topic,
    dlq_partition: d.dlq_partition,
    dlq_offset: Number.isSafeInteger(offset) ? offset : 0,
    // Without source headers the DLQ record itself is the identity of the failure.
    source_topic: known ? (d.source_topic as string) : d.dlq_topic,
    source_partition: known ? (Number.isInteger(d.source_partition) ? (d.source_partition as number) : -1) : d.dlq_partition,
    source_offset: known ? (d.source_offset as string) : d.dlq_offset,
    source_ts_ms: known ? (ms(d.source_ts_ms) ?? failedAt) : failedAt,
    stage: d.stage ?? '',
    code: d.code ?? '',
    message: d.message ?? '',
    failed_at_ms: failedAt,
    key: d.key ?? '',
    value_bytes: d.value_bytes,
    ingested_at_ms: ingestedAtMs,
  };
}

/** Ledger entry → row; the payload is stored as canonical JSON so the stored text re-hashes identically. */
export function ledgerRow(e: LedgerEntry, canonicalPayload: string, ingestedAtMs: number): LedgerRow {
  return {
    entry_id: e.entry_id, agent_id: e.agent_id, tenant: e.tenant, seq: e.seq, ts_ms: e.ts_ms, type: e.type,
    payload: canonicalPayload, prev_hash: e.prev_hash, hash: e.hash, signature: e.signature, kid: e.kid,
    ingested_at_ms: ingestedAtMs,
  };
}

/** Row read back from ClickHouse (UInt64 arrive as strings) → entry. */
export function ledgerEntryFromRow(r: Record<string, unknown>): LedgerEntry {
  const text = String(r.payload);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  // The payload is written as canonical JSON; text that parses to the hashed object without being its
  // canonical form was edited (e.g. a duplicate key: JSON.parse keeps the last, ClickHouse's JSON functions
  // read the first). Keeping the raw text makes the entry fail its hash, so verify reports it as edited.
  const payload: Record<string, unknown> =
    typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)
      ? { __unparseable_payload: text }
      : canonicalize(parsed) !== text
        ? { __noncanonical_payload: text }
        : (parsed as Record<string, unknown>);
  return {
    entry_id: String(r.entry_id), agent_id: String(r.agent_id), tenant: String(r.tenant), seq: Number(r.seq),
    ts_ms: Number(r.ts_ms), type: String(r.type) as LedgerEntry['type'], payload,
    prev_hash: String(r.prev_hash), hash: String(r.hash), signature: String(r.signature), kid: String(r.kid),
  };
}
