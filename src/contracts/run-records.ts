/**
 * The two acgp.ledger message kinds of an ACM run event's replay records (contracts C12, docs/acm.md "In the
 * stream"): `run_record: "pending"` from the tripwire stage and `run_record: "answer"` from the scorer, keyed by
 * agent_id, joined by the sink on (tenant, run_id, event_id). The shapes are the engine's (stream-record.ts, pure,
 * so the sink's join and `steward eval --bundles` build the same records); the field lists here hold
 * schemas/run-record-pending.schema.json and schemas/run-record-answer.schema.json to them.
 */
import type { PendingRunEvent, RunEventAnswer } from '../engine/acm/bundle/stream-record.js';
import type { KnownKeys } from './fields.js';

export type { PendingRunEvent as RunPendingMessage, RunEventAnswer as RunAnswerMessage } from '../engine/acm/bundle/stream-record.js';

export const RUN_PENDING_FIELDS = {
  run_record: true, tenant: true, run_id: true, agent_id: true, trace_id: true, event_id: true, seq: true, now_ms: true, line: true,
  request: true, checks: true, acm: true, contexts: true, drafts: true, engine_version: true, task_id: true,
} as const satisfies Record<KnownKeys<PendingRunEvent>, true>;

export const RUN_ANSWER_FIELDS = {
  run_record: true, tenant: true, run_id: true, agent_id: true, trace_id: true, event_id: true, blueprint: true, intervention: true,
  stage: true, ctq: true, risk: true, metrics: true, verdict: true,
} as const satisfies Record<KnownKeys<RunEventAnswer>, true>;
