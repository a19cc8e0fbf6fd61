import { describe, expect, it } from 'vitest';
import { reviewQueueRow, rolloutEventRow, shadowDiffRow } from '../../../../src/adapters/clickhouse/rollout-rows.js';

describe('rollout table rows (migration 8)', () => {
  it('map their messages and refuse what cannot be a row (non-retryable)', () => {
    expect(reviewQueueRow({ review_id: 'rq:t', trace_id: 't', agent_id: 'a', status: 'taken', confidence: 0.5, threshold: 0.9, ctq: null, reasons: ['low_confidence'], enqueued_at_ms: 5, updated_at_ms: 6 }, 9)).toMatchObject({ status: 'taken', ctq: null, risk: null, reasons: ['low_confidence'], ingested_at_ms: 9, outcome: '' });
    expect(() => reviewQueueRow({ review_id: 'rq:t', trace_id: 't', agent_id: 'a', status: 'lost' }, 1)).toThrow(expect.objectContaining({ code: 'STEWARD_SINK_RECORD', retryable: false }));
    expect(() => reviewQueueRow({ trace_id: 't', agent_id: 'a', status: 'queued' }, 1)).toThrow(/review_id is required/);
    const d = { shadow_id: 's', trace_id: 't', agent_id: 'a', changed: true, change_kinds: ['intervention'], ctq_delta: null, event_time_ms: 3 };
    expect(shadowDiffRow(d, 1)).toMatchObject({ changed: 1, change_kinds: ['intervention'], diff_json: JSON.stringify(d) });
    expect(rolloutEventRow({ event_id: 'rollout:x:2', blueprint: 'x', kind: 'rollback', from_percent: 5, to_percent: 0, canary_value: 0.5, stable_value: 0, ts_ms: 4 }, 1)).toMatchObject({ kind: 'rollback', from_percent: 5, ts_ms: 4 });
    expect(() => rolloutEventRow({ event_id: 'e', blueprint: 'x', kind: 'set', from_percent: 'five' }, 1)).toThrow(/from_percent must be a number/);
  });
});
