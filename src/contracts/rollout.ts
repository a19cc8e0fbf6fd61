/**
 * Wire shapes of issue #26 (contracts C8, docs/rollout.md): acgp.rollouts (rollout changes and rollbacks),
 * acgp.shadow-diffs (shadow evaluation differences) and acgp.review-queue (low-confidence verdicts and their
 * review). The sink lands them in rollout_events, shadow_diffs and review_queue (migration 8).
 */

/** acgp.rollouts — a rollout change; key: the blueprint name. Dedupe key event_id. */
export interface RolloutEventMessage {
  event_id: string;
  blueprint: string;
  kind: 'set' | 'rollback';
  stable_version: string;
  canary_version: string;
  from_percent: number;
  to_percent: number;
  /** The rollback trigger that fired ('' for set, `manual_trigger` for a manual rollback). */
  trigger_id: string;
  metric: string;
  canary_value: number;
  stable_value: number;
  reason: string;
  /** `steward` (a trigger) or the operator (`--by`). */
  actor: string;
  ts_ms: number;
}

/** acgp.shadow-diffs — one trace evaluated by the active and a shadow blueprint set; key: agent_id. */
export type { ShadowDiff as ShadowDiffMessage } from '../engine/rollout/diff.js';

export type ReviewStatus = 'queued' | 'taken' | 'resolved';

/** acgp.review-queue — a review's state (queued, taken, resolved); key: agent_id; review_id = rq:<trace_id>. */
export interface ReviewQueueMessage {
  review_id: string;
  trace_id: string;
  agent_id: string;
  tenant: string;
  blueprint: string;
  blueprint_version: string;
  rollout_arm: string;
  intervention: string;
  confidence: number;
  threshold: number;
  ctq: number | null;
  risk: number | null;
  reasons: string[];
  status: ReviewStatus;
  outcome: '' | 'approved' | 'denied';
  reviewer: string;
  note: string;
  event_time_ms: number;
  enqueued_at_ms: number;
  sla_due_ms: number;
  taken_at_ms: number;
  resolved_at_ms: number;
  updated_at_ms: number;
}
