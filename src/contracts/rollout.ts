/**
 * Wire shapes of issue #26 (contracts C8, docs/rollout.md): acgp.rollouts (rollout changes and rollbacks),
 * acgp.shadow-diffs (shadow evaluation differences) and acgp.review-queue (low-confidence verdicts and their
 * review). The sink lands them in rollout_events, shadow_diffs and review_queue (migration 8).
 */

/** acgp.rollouts — a rollout change; key: the blueprint name. Dedupe key event_id. */
export type { RolloutEvent as RolloutEventMessage } from '../engine/rollout/events.js';

/** acgp.shadow-diffs — one trace evaluated by the active and a shadow blueprint set; key: agent_id. */
export type { ShadowDiff as ShadowDiffMessage } from '../engine/rollout/diff.js';

/** acgp.review-queue — a review's state (queued, taken, resolved); key: agent_id; review_id = rq:<trace_id>. */
export type { ReviewItem as ReviewQueueMessage, ReviewStatus } from '../engine/rollout/review-queue.js';
