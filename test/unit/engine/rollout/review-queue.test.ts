import { describe, expect, it } from 'vitest';
import { needsReview, queuedItem, ReviewQueueHook, type ReviewItem } from '../../../../src/engine/rollout/review-queue.js';
import type { ScoreRecord } from '../../../../src/engine/records.js';

const score = (confidence: number): ScoreRecord =>
  ({ traceId: 't1', agentId: 'a', tenant: 'ten', blueprint: 'b@1', intervention: 'flag', approved: true, stage: 'ctq', ctq: 0.5, risk: 0.5, confidence, metrics: [], verdict: { policy_violations: ['x'] }, latencyMs: 1, trustDebt: { debt: 0, level: 'normal' }, fullScoring: false }) as unknown as ScoreRecord;

describe('review queue hook (PVS-1 §5.3)', () => {
  it('queues below the threshold only, once per trace, with its SLA', async () => {
    expect(needsReview(score(0.89), 0.9)).toBe(true);
    expect(needsReview(score(0.9), 0.9)).toBe(false);
    expect(queuedItem(score(0.5), { eventTimeMs: 7, blueprintVersion: '1.0.0', rolloutArm: 'canary' }, { threshold: 0.9, slaMs: 100, nowMs: 1000 })).toMatchObject({
      review_id: 'rq:t1', status: 'queued', outcome: '', enqueued_at_ms: 1000, sla_due_ms: 1100, updated_at_ms: 1000, event_time_ms: 7, rollout_arm: 'canary', reasons: ['low_confidence', 'x'],
    });
    const items = new Map<string, ReviewItem>();
    const seen: string[] = [];
    const hook = new ReviewQueueHook({
      store: { enqueue: async (i) => (items.has(i.review_id) ? false : (items.set(i.review_id, i), true)) },
      topic: 'p.review-queue', threshold: 0.9, slaMs: 100, nowMs: () => 1000, onEnqueued: (i) => seen.push(i.review_id),
    });
    expect(await hook.afterVerdict(score(0.95), { eventTimeMs: 1 })).toEqual([]);
    const out = await hook.afterVerdict(score(0.5), { eventTimeMs: 1 });
    expect(out).toEqual([{ topic: 'p.review-queue', message: { key: 'a', value: expect.stringContaining('"review_id":"rq:t1"') } }]);
    expect(await hook.afterVerdict(score(0.5), { eventTimeMs: 1 })).toEqual([]);
    expect(seen).toEqual(['rq:t1']);
  });
});
