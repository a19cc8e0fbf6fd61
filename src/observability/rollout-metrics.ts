/**
 * Metrics of issue #26 (docs/rollout.md), in the process registry: rollbacks (the alert metric), rollout
 * percentages, shadow diffs, and the review queue's size, age and SLA.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export class RolloutMetrics {
  /** Alert on any increase: a rollback trigger fired and the canary went to 0 %. */
  readonly rollbacks: Counter<'blueprint' | 'trigger'>;
  readonly rolloutPercent: Gauge<'blueprint'>;
  readonly shadowDiffs: Counter<'shadow_id' | 'changed'>;
  readonly shadowErrors: Counter<'shadow_id'>;
  readonly reviewEnqueued: Counter<'tenant'>;
  readonly reviewOpen: Gauge;
  readonly reviewOldestAge: Gauge;
  readonly reviewOverdue: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.rollbacks = new Counter({ name: 'steward_rollout_rollbacks_total', help: 'Rollouts moved back to 0 % by a rollback trigger (alert on any increase), by blueprint name and trigger', labelNames: ['blueprint', 'trigger'], registers });
    this.rolloutPercent = new Gauge({ name: 'steward_rollout_canary_percent', help: 'Canary percentage of each staged rollout as this instance last read it', labelNames: ['blueprint'], registers });
    this.shadowDiffs = new Counter({ name: 'steward_shadow_diffs_total', help: 'Traces evaluated in shadow, by shadow run and whether the decision changed', labelNames: ['shadow_id', 'changed'], registers });
    this.shadowErrors = new Counter({ name: 'steward_shadow_errors_total', help: 'Shadow evaluations that failed (dropped; the live answer is unaffected)', labelNames: ['shadow_id'], registers });
    this.reviewEnqueued = new Counter({ name: 'steward_review_queue_enqueued_total', help: 'Verdicts queued for human review (confidence below engine.human_review_confidence)', labelNames: ['tenant'], registers });
    this.reviewOpen = new Gauge({ name: 'steward_review_queue_open', help: 'Reviews queued or taken and not resolved', registers });
    this.reviewOldestAge = new Gauge({ name: 'steward_review_queue_oldest_age_seconds', help: 'Age of the oldest open review (0 when none)', registers });
    this.reviewOverdue = new Gauge({ name: 'steward_review_queue_overdue', help: 'Open reviews past their SLA (rollout.review_sla_ms)', registers });
  }
}
