/**
 * The sink's tables as TypeScript sees them: the row of each table and each table's column spec (insert
 * order and ClickHouse types). What the sink consumes is typed once, in src/contracts/messages.ts; the
 * mappers in rows.ts validate those messages (and the older forms they still accept) into rows.
 */
import type { Columns } from './tsv.js';

// ───────────────────────────── consumed metadata ─────────────────────────────

/** acgp.dlq — only metadata is stored (the DLQ topic keeps the bytes). Built from the record's headers. */
export interface DlqMeta {
  dlq_topic: string;
  dlq_partition: number;
  dlq_offset: string;
  source_topic?: string;
  source_partition?: number;
  source_offset?: string;
  /** Kafka timestamp of the original record (x-steward-source-timestamp). */
  source_ts_ms?: number;
  stage?: string;
  code?: string;
  message?: string;
  failed_at_ms?: number;
  /** Kafka timestamp of the DLQ record, used when failed_at_ms is absent. */
  timestamp_ms: number;
  key?: string;
  value_bytes: number;
}

// ───────────────────────────── rows ─────────────────────────────

export interface DecisionRow {
  trace_id: string; agent_id: string; tenant: string; blueprint: string;
  intervention: string; approved: number; stage: string; halted: number; severity: string;
  reasons: string[]; tripwires_fired: string[]; rules_failed: string[];
  tripwires_json: string; rules_json: string;
  latency_ms: number; event_time_ms: number; decided_at_ms: number;
  hook: string; tool: string; session_id: string; engine_version: string; fallback: number;
  /** The selected blueprint's version and its rollout arm (docs/rollout.md); '' on records without them. */
  blueprint_version: string; rollout_arm: string;
  ingested_at_ms: number;
}

export interface VerdictRow {
  trace_id: string; agent_id: string; tenant: string; blueprint: string;
  intervention: string; approved: number; stage: string;
  ctq: number | null; risk: number | null; confidence: number;
  policy_violations: string[]; metric_names: string[]; metric_scores: (number | null)[]; metric_statuses: string[];
  metrics_json: string; verdict_json: string; signature: string;
  event_time_ms: number; scored_at_ms: number; ingested_at_ms: number;
}

export interface TrustDebtRow {
  event_id: string; tenant: string; agent_id: string; ts_ms: number; cause: string;
  before: number; after: number; level: string; previous_level: string; crossings: string[];
  trace_id: string; ingested_at_ms: number;
}

export interface LedgerRow {
  entry_id: string; agent_id: string; tenant: string; seq: number; ts_ms: number; type: string;
  /** Canonical JSON of the payload. */
  payload: string; prev_hash: string; hash: string; signature: string; kid: string; ingested_at_ms: number;
}

export interface DlqRow {
  dlq_topic: string; dlq_partition: number; dlq_offset: number;
  source_topic: string; source_partition: number; source_offset: string; source_ts_ms: number; stage: string;
  code: string; message: string; failed_at_ms: number; key: string; value_bytes: number; ingested_at_ms: number;
}

export interface GateRow {
  trace_id: string; agent_id: string; tenant: string; intervention: string; approved: number;
  ts_ms: number; payload: string; ingested_at_ms: number;
}

/** A `final_alignment_judge_result` on acgp.gate (docs/analytics.md "Finalization gate"); absent strings are ''. */
export interface GateJudgeResultRow {
  event_id: string; trace_id: string; job_id: string; agent_id: string; tenant: string;
  session_id: string; user_id_hash: string; intent_id: string; capability_profile_id: string; skill_id: string;
  quality_score: number | null; verdict: string; reason_codes: string[]; fix_mode: string;
  attempt_index: number; action: string; judged_by: string; degraded: number; model_id: string;
  token_cost: number | null; latency_ms: number; ts_ms: number; ingested_at_ms: number;
}

/** A `finalization_outcome`; `feedback_at_ms` (the table's version) is 0 until the row carries user feedback. */
export interface GateOutcomeRow {
  event_id: string; trace_id: string; job_id: string; agent_id: string; tenant: string;
  session_id: string; intent_id: string; final_verdict: string; action: string;
  num_retries: number; time_to_finalize_ms: number; user_feedback: string;
  ts_ms: number; feedback_at_ms: number; ingested_at_ms: number;
}

export type TableName =
  | 'decisions' | 'verdicts' | 'trust_debt_events' | 'ledger' | 'acm_ledger' | 'acm_run_records' | 'dlq_events' | 'gate_events'
  | 'gate_judge_results' | 'gate_outcomes'
  | 'review_queue' | 'shadow_diffs' | 'rollout_events'
  | 'approvals';

// ──────────────────────── columns (insert order and types) ────────────────────────
// One spec per table, typed against its row interface (a missing or extra column fails to compile) and
// checked against the migrated tables (system.columns) by test/integration/clickhouse/tsv.int.test.ts.

export const DECISION_COLUMNS: Columns<DecisionRow> = {
  trace_id: 'String', agent_id: 'String', tenant: 'String', blueprint: 'String',
  intervention: 'String', approved: 'UInt8', stage: 'String', halted: 'UInt8', severity: 'String',
  reasons: 'Array(String)', tripwires_fired: 'Array(String)', rules_failed: 'Array(String)',
  tripwires_json: 'String', rules_json: 'String',
  latency_ms: 'Float64', event_time_ms: 'UInt64', decided_at_ms: 'UInt64',
  hook: 'String', tool: 'String', session_id: 'String', engine_version: 'String', fallback: 'UInt8',
  blueprint_version: 'String', rollout_arm: 'String',
  ingested_at_ms: 'UInt64',
};

export const VERDICT_COLUMNS: Columns<VerdictRow> = {
  trace_id: 'String', agent_id: 'String', tenant: 'String', blueprint: 'String',
  intervention: 'String', approved: 'UInt8', stage: 'String',
  ctq: 'Nullable(Float64)', risk: 'Nullable(Float64)', confidence: 'Float64',
  policy_violations: 'Array(String)',
  metric_names: 'Array(String)', metric_scores: 'Array(Nullable(Float64))', metric_statuses: 'Array(String)',
  metrics_json: 'String', verdict_json: 'String', signature: 'String',
  event_time_ms: 'UInt64', scored_at_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

export const TRUST_DEBT_COLUMNS: Columns<TrustDebtRow> = {
  event_id: 'String', tenant: 'String', agent_id: 'String', ts_ms: 'UInt64', cause: 'String',
  before: 'Float64', after: 'Float64', level: 'String', previous_level: 'String', crossings: 'Array(String)',
  trace_id: 'String', ingested_at_ms: 'UInt64',
};

export const LEDGER_COLUMNS: Columns<LedgerRow> = {
  entry_id: 'String', agent_id: 'String', tenant: 'String', seq: 'UInt64', ts_ms: 'UInt64', type: 'String',
  payload: 'String', prev_hash: 'String', hash: 'String', signature: 'String', kid: 'String', ingested_at_ms: 'UInt64',
};

/** A run chain's entry (spec-decisions D30): the ledger row plus the run it chains under. */
export interface AcmLedgerRow extends LedgerRow {
  run_id: string;
}

export const ACM_LEDGER_COLUMNS: Columns<AcmLedgerRow> = { ...LEDGER_COLUMNS, run_id: 'String' };

/**
 * A replay record of an ACM run (docs/acm.md "Replay bundles"): `trace`, `request`, `response` (seq: the event's place
 * in the run), `context` (a context version); and the halves the sink's join keeps until their other half arrives:
 * `pending` (the tripwire stage's, seq: the event's) and `answer` (the scorer's, seq: from its event id).
 */
export interface AcmRunRecordRow {
  tenant: string; run_id: string; kind: string; seq: number; agent_id: string; trace_id: string; line: string;
  ts_ms: number; ingested_at_ms: number;
}

export const ACM_RUN_RECORD_COLUMNS: Columns<AcmRunRecordRow> = {
  tenant: 'String', run_id: 'String', kind: 'String', seq: 'UInt64', agent_id: 'String', trace_id: 'String', line: 'String',
  ts_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

export const DLQ_COLUMNS: Columns<DlqRow> = {
  dlq_topic: 'String', dlq_partition: 'UInt32', dlq_offset: 'UInt64',
  source_topic: 'String', source_partition: 'Int32', source_offset: 'String', source_ts_ms: 'UInt64', stage: 'String',
  code: 'String', message: 'String', failed_at_ms: 'UInt64', key: 'String', value_bytes: 'UInt64', ingested_at_ms: 'UInt64',
};

export const GATE_COLUMNS: Columns<GateRow> = {
  trace_id: 'String', agent_id: 'String', tenant: 'String', intervention: 'String', approved: 'UInt8',
  ts_ms: 'UInt64', payload: 'String', ingested_at_ms: 'UInt64',
};

export const GATE_JUDGE_RESULT_COLUMNS: Columns<GateJudgeResultRow> = {
  event_id: 'String', trace_id: 'String', job_id: 'String', agent_id: 'String', tenant: 'String',
  session_id: 'String', user_id_hash: 'String', intent_id: 'String', capability_profile_id: 'String', skill_id: 'String',
  quality_score: 'Nullable(Float64)', verdict: 'String', reason_codes: 'Array(String)', fix_mode: 'String',
  attempt_index: 'UInt32', action: 'String', judged_by: 'String', degraded: 'UInt8', model_id: 'String',
  token_cost: 'Nullable(Float64)', latency_ms: 'Float64', ts_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

export const GATE_OUTCOME_COLUMNS: Columns<GateOutcomeRow> = {
  event_id: 'String', trace_id: 'String', job_id: 'String', agent_id: 'String', tenant: 'String',
  session_id: 'String', intent_id: 'String', final_verdict: 'String', action: 'String',
  num_retries: 'UInt32', time_to_finalize_ms: 'UInt64', user_feedback: 'String',
  ts_ms: 'UInt64', feedback_at_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

// docs/rollout.md (migration 8): rows built by rollout-rows.ts.
export interface ReviewQueueRow {
  review_id: string; trace_id: string; agent_id: string; tenant: string;
  blueprint: string; blueprint_version: string; rollout_arm: string;
  intervention: string; confidence: number; threshold: number; ctq: number | null; risk: number | null;
  reasons: string[]; status: string; outcome: string; reviewer: string; note: string;
  event_time_ms: number; enqueued_at_ms: number; sla_due_ms: number; taken_at_ms: number; resolved_at_ms: number;
  updated_at_ms: number; ingested_at_ms: number;
}

export const REVIEW_QUEUE_COLUMNS: Columns<ReviewQueueRow> = {
  review_id: 'String', trace_id: 'String', agent_id: 'String', tenant: 'String',
  blueprint: 'String', blueprint_version: 'String', rollout_arm: 'String',
  intervention: 'String', confidence: 'Float64', threshold: 'Float64', ctq: 'Nullable(Float64)', risk: 'Nullable(Float64)',
  reasons: 'Array(String)', status: 'String', outcome: 'String', reviewer: 'String', note: 'String',
  event_time_ms: 'UInt64', enqueued_at_ms: 'UInt64', sla_due_ms: 'UInt64', taken_at_ms: 'UInt64', resolved_at_ms: 'UInt64',
  updated_at_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

export interface ShadowDiffRow {
  shadow_id: string; trace_id: string; agent_id: string; tenant: string; pipeline_stage: string;
  active_blueprint: string; shadow_blueprint: string;
  active_intervention: string; shadow_intervention: string; active_stage: string; shadow_stage: string;
  changed: number; change_kinds: string[];
  active_tripwires_fired: string[]; shadow_tripwires_fired: string[];
  active_rules_failed: string[]; shadow_rules_failed: string[];
  ctq_delta: number | null; diff_json: string;
  event_time_ms: number; evaluated_at_ms: number; ingested_at_ms: number;
}

export const SHADOW_DIFF_COLUMNS: Columns<ShadowDiffRow> = {
  shadow_id: 'String', trace_id: 'String', agent_id: 'String', tenant: 'String', pipeline_stage: 'String',
  active_blueprint: 'String', shadow_blueprint: 'String',
  active_intervention: 'String', shadow_intervention: 'String', active_stage: 'String', shadow_stage: 'String',
  changed: 'UInt8', change_kinds: 'Array(String)',
  active_tripwires_fired: 'Array(String)', shadow_tripwires_fired: 'Array(String)',
  active_rules_failed: 'Array(String)', shadow_rules_failed: 'Array(String)',
  ctq_delta: 'Nullable(Float64)', diff_json: 'String',
  event_time_ms: 'UInt64', evaluated_at_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

export interface RolloutEventRow {
  event_id: string; blueprint: string; kind: string; stable_version: string; canary_version: string;
  from_percent: number; to_percent: number; trigger_id: string; metric: string;
  canary_value: number; stable_value: number; reason: string; actor: string; ts_ms: number; ingested_at_ms: number;
}

export const ROLLOUT_EVENT_COLUMNS: Columns<RolloutEventRow> = {
  event_id: 'String', blueprint: 'String', kind: 'String', stable_version: 'String', canary_version: 'String',
  from_percent: 'Float64', to_percent: 'Float64', trigger_id: 'String', metric: 'String',
  canary_value: 'Float64', stable_value: 'Float64', reason: 'String', actor: 'String', ts_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

// docs/approvals.md (migration 9): rows built by approval-rows.ts.
export interface ApprovalRow {
  approval_id: string; agent_id: string; tenant: string; agent_tier: string; tool: string; trace_id: string;
  job_id: string; skill_id: string; role: string; status: string; decision: string; default_action: string;
  approver: string; via: string; reason: string;
  requested_ms: number; deadline_ms: number; decided_ms: number; updated_ms: number; ingested_at_ms: number;
}

export const APPROVAL_COLUMNS: Columns<ApprovalRow> = {
  approval_id: 'String', agent_id: 'String', tenant: 'String', agent_tier: 'String', tool: 'String', trace_id: 'String',
  job_id: 'String', skill_id: 'String', role: 'String', status: 'String', decision: 'String', default_action: 'String',
  approver: 'String', via: 'String', reason: 'String',
  requested_ms: 'UInt64', deadline_ms: 'UInt64', decided_ms: 'UInt64', updated_ms: 'UInt64', ingested_at_ms: 'UInt64',
};

export const TABLE_COLUMNS: { readonly [T in TableName]: Columns<object> } = {
  decisions: DECISION_COLUMNS,
  verdicts: VERDICT_COLUMNS,
  trust_debt_events: TRUST_DEBT_COLUMNS,
  ledger: LEDGER_COLUMNS,
  acm_ledger: ACM_LEDGER_COLUMNS,
  acm_run_records: ACM_RUN_RECORD_COLUMNS,
  dlq_events: DLQ_COLUMNS,
  gate_events: GATE_COLUMNS,
  gate_judge_results: GATE_JUDGE_RESULT_COLUMNS,
  gate_outcomes: GATE_OUTCOME_COLUMNS,
  review_queue: REVIEW_QUEUE_COLUMNS,
  shadow_diffs: SHADOW_DIFF_COLUMNS,
  rollout_events: ROLLOUT_EVENT_COLUMNS,
  approvals: APPROVAL_COLUMNS,
};
