/**
 * The human review queue (PVS-1 §5.3; docs/rollout.md "Review queue"): a verdict below the confidence
 * threshold is queued for a reviewer (review_id rq:<trace_id>, one per trace), taken by one reviewer, and
 * resolved approved or denied; an approval feeds the existing trust-debt review credit (the same
 * `review:<trace_id>` event `steward review approve --trace` applies). The store is shared (Redis); every
 * state change is also an acgp.review-queue record for the review_queue table.
 */
import type { ScoreRecord } from '../records.js';

export type ReviewStatus = 'queued' | 'taken' | 'resolved';
export type ReviewOutcome = '' | 'approved' | 'denied';

/** A review's state, in the shape acgp.review-queue carries (contracts C8 ReviewQueueMessage). */
export interface ReviewItem {
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
  outcome: ReviewOutcome;
  reviewer: string;
  note: string;
  event_time_ms: number;
  enqueued_at_ms: number;
  sla_due_ms: number;
  taken_at_ms: number;
  resolved_at_ms: number;
  updated_at_ms: number;
}

export interface ReviewQueueStore {
  /** Adds the item unless its review_id is known; returns whether it was added. */
  enqueue(item: ReviewItem): Promise<boolean>;
}

export const reviewIdOf = (traceId: string): string => `rq:${traceId}`;

export function needsReview(score: Pick<ScoreRecord, 'confidence'>, threshold: number): boolean {
  return Number.isFinite(score.confidence) && score.confidence < threshold;
}

export function queuedItem(
  score: ScoreRecord,
  d: { blueprintVersion?: string; rolloutArm?: string; eventTimeMs: number },
  o: { threshold: number; slaMs: number; nowMs: number },
): ReviewItem {
  return {
    review_id: reviewIdOf(score.traceId),
    trace_id: score.traceId,
    agent_id: score.agentId,
    tenant: score.tenant,
    blueprint: score.blueprint,
    blueprint_version: d.blueprintVersion ?? '',
    rollout_arm: d.rolloutArm ?? '',
    intervention: score.intervention,
    confidence: score.confidence,
    threshold: o.threshold,
    ctq: score.ctq,
    risk: score.risk,
    reasons: ['low_confidence', ...score.verdict.policy_violations],
    status: 'queued',
    outcome: '',
    reviewer: '',
    note: '',
    event_time_ms: d.eventTimeMs,
    enqueued_at_ms: o.nowMs,
    sla_due_ms: o.nowMs + o.slaMs,
    taken_at_ms: 0,
    resolved_at_ms: 0,
    updated_at_ms: o.nowMs,
  };
}

export interface ReviewHookOptions {
  store: ReviewQueueStore;
  topic: string;
  threshold: number;
  slaMs: number;
  nowMs: () => number;
  onEnqueued?: (item: ReviewItem) => void;
  /** Told when the shared store refused the item for lack of memory (the record is published all the same). */
  onNotQueued?: (item: ReviewItem, err: unknown) => void;
}

/** The reason a review carries when the shared store could not take it (spec-decisions D32). */
export const NOT_QUEUED_OOM = 'not_queued: the shared review queue (Redis) is out of memory';

/** The scorer stage's hook: queue a low-confidence verdict once, and emit its `queued` state. */
export class ReviewQueueHook {
  constructor(private readonly o: ReviewHookOptions) {}

  async afterVerdict(score: ScoreRecord, d: { blueprintVersion?: string; rolloutArm?: string; eventTimeMs: number }): Promise<{ topic: string; message: { key: string; value: string } }[]> {
    if (!needsReview(score, this.o.threshold)) return [];
    const item = queuedItem(score, d, { threshold: this.o.threshold, slaMs: this.o.slaMs, nowMs: this.o.nowMs() });
    let added: boolean;
    try {
      added = await this.o.store.enqueue(item);
    } catch (e) {
      // spec-decisions D32: a full Redis must not cost the verdict (and the debt it carries) for the sake of its
      // review. The review is still published (review_queue in ClickHouse keeps it, with the reason); only the
      // shared queue reviewers take items from lacks it. Any other failure is the store's to classify (retried).
      if ((e as { code?: unknown }).code !== 'STEWARD_STATE_OOM') throw e;
      this.o.onNotQueued?.(item, e);
      return [{ topic: this.o.topic, message: { key: item.agent_id, value: JSON.stringify({ ...item, reasons: [...item.reasons, NOT_QUEUED_OOM] }) } }];
    }
    // A redelivered verdict finds its review already queued (or taken): nothing new to say.
    if (!added) return [];
    this.o.onEnqueued?.(item);
    return [{ topic: this.o.topic, message: { key: item.agent_id, value: JSON.stringify(item) } }];
  }
}
