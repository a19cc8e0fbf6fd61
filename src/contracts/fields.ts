/**
 * The field names of each wire message, checked against its type at compile time (a field added to a type
 * and not here, or the other way round, fails `tsc`). test/unit/contracts/wire-contracts.test.ts holds the
 * Avro and JSON Schema files to these lists, so the TypeScript types stay the one definition.
 */
import type { LedgerEntry } from '../engine/ledger/types.js';
import type { Trace } from '../engine/types.js';
import type { DecisionMessage, TrustDebtMessage, VerdictMessage } from './messages.js';

/** The declared keys of T, without an index signature's `string`. */
export type KnownKeys<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

type FieldSet<T> = Record<KnownKeys<T>, true>;

export const TRACE_FIELDS = {
  trace_id: true, agent_id: true, timestamp: true, hook: true, tool: true, args: true, action: true, reasoning: true, content: true,
  context: true, sources: true, destination: true, response_size: true, session_id: true, goal_id: true, plan_id: true, task_id: true,
} as const satisfies FieldSet<Trace>;

export const DECISION_FIELDS = {
  trace_id: true, agent_id: true, tenant: true, blueprint: true, intervention: true, approved: true, stage: true, halted: true,
  reasons: true, severity: true, tripwires: true, rules: true, latency_ms: true, event_time_ms: true, decided_at_ms: true, hook: true,
  tool: true, session_id: true, engine_version: true, event_id: true, rejected: true, fallback: true, fallback_reason: true, degraded: true,
  blueprint_version: true, rollout_arm: true, approval_id: true, approval_deadline_ms: true,
} as const satisfies FieldSet<DecisionMessage>;

export const VERDICT_FIELDS = {
  trace_id: true, agent_id: true, tenant: true, blueprint: true, intervention: true, approved: true, stage: true, ctq: true, risk: true,
  severity: true, metrics: true, verdict: true, event_time_ms: true, scored_at_ms: true, event_id: true, degraded: true,
} as const satisfies FieldSet<VerdictMessage>;

export const TRUST_DEBT_FIELDS = {
  event_id: true, trace_id: true, tenant: true, agent_id: true, at_ms: true, cause: true, before: true, after: true, level: true,
  previous_level: true, crossings: true, duplicate: true,
} as const satisfies FieldSet<TrustDebtMessage>;

export const LEDGER_ENTRY_FIELDS = {
  entry_id: true, agent_id: true, tenant: true, seq: true, ts_ms: true, type: true, payload: true, prev_hash: true, hash: true,
  signature: true, kid: true,
} as const satisfies FieldSet<LedgerEntry>;
