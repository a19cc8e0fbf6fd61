/**
 * Rows of the rollout tables (migration 8, docs/rollout.md) from their acgp.* messages (contracts C8). Like
 * rows.ts: a record that cannot become a row throws STEWARD_SINK_RECORD (non-retryable, dead-lettered).
 */
import { StewardError } from '../../errors.js';
import type { ReviewQueueRow, RolloutEventRow, ShadowDiffRow } from './tables.js';

type O = Record<string, unknown>;

function bad(what: string): never {
  throw new StewardError('STEWARD_SINK_RECORD', what, { retryable: false });
}

function objOf(m: unknown, kind: string): O {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) bad(`${kind}: not a JSON object`);
  return m as O;
}

const s = (o: O, k: string, kind: string, required = false): string => {
  const v = o[k];
  if (typeof v === 'string' && (v.length > 0 || !required)) return v;
  if (v === undefined || v === null) return required ? bad(`${kind}: ${k} is required`) : '';
  return bad(`${kind}: ${k} must be a string`);
};
const n = (o: O, k: string, kind: string): number => {
  const v = o[k] ?? 0;
  if (typeof v !== 'number' || !Number.isFinite(v)) bad(`${kind}: ${k} must be a number`);
  return v;
};
const ms = (o: O, k: string, kind: string): number => Math.max(0, Math.trunc(n(o, k, kind)));
const nn = (o: O, k: string, kind: string): number | null => (o[k] === null || o[k] === undefined ? null : n(o, k, kind));
const list = (o: O, k: string): string[] => (Array.isArray(o[k]) ? (o[k] as unknown[]).filter((x): x is string => typeof x === 'string') : []);

export function reviewQueueRow(m: unknown, ingestedAtMs: number): ReviewQueueRow {
  const k = 'review-queue';
  const o = objOf(m, k);
  const status = s(o, 'status', k, true);
  if (!['queued', 'taken', 'resolved'].includes(status)) bad(`${k}: status must be queued, taken or resolved`);
  return {
    review_id: s(o, 'review_id', k, true), trace_id: s(o, 'trace_id', k, true), agent_id: s(o, 'agent_id', k, true), tenant: s(o, 'tenant', k),
    blueprint: s(o, 'blueprint', k), blueprint_version: s(o, 'blueprint_version', k), rollout_arm: s(o, 'rollout_arm', k),
    intervention: s(o, 'intervention', k), confidence: n(o, 'confidence', k), threshold: n(o, 'threshold', k), ctq: nn(o, 'ctq', k), risk: nn(o, 'risk', k),
    reasons: list(o, 'reasons'), status, outcome: s(o, 'outcome', k), reviewer: s(o, 'reviewer', k), note: s(o, 'note', k),
    event_time_ms: ms(o, 'event_time_ms', k), enqueued_at_ms: ms(o, 'enqueued_at_ms', k), sla_due_ms: ms(o, 'sla_due_ms', k),
    taken_at_ms: ms(o, 'taken_at_ms', k), resolved_at_ms: ms(o, 'resolved_at_ms', k), updated_at_ms: ms(o, 'updated_at_ms', k),
    ingested_at_ms: ingestedAtMs,
  };
}

export function shadowDiffRow(m: unknown, ingestedAtMs: number): ShadowDiffRow {
  const k = 'shadow-diff';
  const o = objOf(m, k);
  return {
    shadow_id: s(o, 'shadow_id', k, true), trace_id: s(o, 'trace_id', k, true), agent_id: s(o, 'agent_id', k, true), tenant: s(o, 'tenant', k),
    pipeline_stage: s(o, 'pipeline_stage', k), active_blueprint: s(o, 'active_blueprint', k), shadow_blueprint: s(o, 'shadow_blueprint', k),
    active_intervention: s(o, 'active_intervention', k), shadow_intervention: s(o, 'shadow_intervention', k),
    active_stage: s(o, 'active_stage', k), shadow_stage: s(o, 'shadow_stage', k),
    changed: o.changed === true ? 1 : 0, change_kinds: list(o, 'change_kinds'),
    active_tripwires_fired: list(o, 'active_tripwires_fired'), shadow_tripwires_fired: list(o, 'shadow_tripwires_fired'),
    active_rules_failed: list(o, 'active_rules_failed'), shadow_rules_failed: list(o, 'shadow_rules_failed'),
    ctq_delta: nn(o, 'ctq_delta', k), diff_json: JSON.stringify(o),
    event_time_ms: ms(o, 'event_time_ms', k), evaluated_at_ms: ms(o, 'evaluated_at_ms', k), ingested_at_ms: ingestedAtMs,
  };
}

export function rolloutEventRow(m: unknown, ingestedAtMs: number): RolloutEventRow {
  const k = 'rollout-event';
  const o = objOf(m, k);
  return {
    event_id: s(o, 'event_id', k, true), blueprint: s(o, 'blueprint', k, true), kind: s(o, 'kind', k, true),
    stable_version: s(o, 'stable_version', k), canary_version: s(o, 'canary_version', k),
    from_percent: n(o, 'from_percent', k), to_percent: n(o, 'to_percent', k), trigger_id: s(o, 'trigger_id', k), metric: s(o, 'metric', k),
    canary_value: n(o, 'canary_value', k), stable_value: n(o, 'stable_value', k), reason: s(o, 'reason', k), actor: s(o, 'actor', k),
    ts_ms: ms(o, 'ts_ms', k), ingested_at_ms: ingestedAtMs,
  };
}
