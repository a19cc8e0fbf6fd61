import { describe, expect, it } from 'vitest';
import { decisionRow, dlqRow, trustDebtRow, verdictRow } from '../../../../src/adapters/clickhouse/rows.js';

const decision = {
  trace_id: 't-1', agent_id: 'trader-1', tenant: 'acme', blueprint: 'finance/trading_bot@1.0', intervention: 'block', stage: 'rule',
  reasons: ['too big'], tripwires: [{ id: 'tw1', fired: true }, { id: 'tw2', fired: false }], rules: [{ id: 'cap', passed: false }, { id: 'ok', passed: true }],
  latency_ms: 2.5, event_time_ms: 1_700_000_000_123, hook: 'tool_call',
};

describe('row mappers', () => {
  it('decision: fired tripwires and failed rules become arrays, approved follows the intervention', () => {
    const r = decisionRow(decision, 9);
    expect(r).toMatchObject({ approved: 0, tripwires_fired: ['tw1'], rules_failed: ['cap'], decided_at_ms: 1_700_000_000_123, ingested_at_ms: 9, tool: '' });
    expect(JSON.parse(r.rules_json)).toHaveLength(2);
  });

  it('decision: the ISO timestamp is accepted when event_time_ms is absent', () => {
    const { event_time_ms: _e, ...rest } = decision;
    expect(decisionRow({ ...rest, timestamp: '2024-01-01T00:00:00.000Z' }, 1).event_time_ms).toBe(Date.UTC(2024, 0, 1));
  });

  it('rejects records that cannot become rows, non-retryably', () => {
    expect(() => decisionRow({ ...decision, trace_id: undefined }, 1)).toThrow(expect.objectContaining({ code: 'STEWARD_SINK_RECORD', retryable: false }));
    expect(() => decisionRow({ ...decision, event_time_ms: -5 }, 1)).toThrow(/must not be negative/);
    expect(() => decisionRow('nope', 1)).toThrow(/not a JSON object/);
    expect(() => verdictRow({ trace_id: 't', agent_id: 'a', intervention: 'ok', ctq: 'high', verdict: {}, event_time_ms: 1 }, 1)).toThrow(/ctq must be a finite number/);
  });

  it('verdict: null ctq stays null, unscored metrics keep their place as null, signature extracted', () => {
    const r = verdictRow(
      {
        trace_id: 't', agent_id: 'a', blueprint: 'b', intervention: 'flag', ctq: null, risk: null, event_time_ms: 5,
        metrics: [{ name: 'clarity', score: 0.8, status: 'ok' }, { name: 'tone', score: null, status: 'skipped' }],
        verdict: { approved: true, confidence_score: 0.7, policy_violations: ['tone'], signature: { alg: 'Ed25519', kid: 'k', sig: 's' }, metadata: { tenant_id: 'acme' } },
      },
      1,
    );
    expect(r).toMatchObject({ ctq: null, risk: null, tenant: 'acme', approved: 1, confidence: 0.7, metric_scores: [0.8, null], metric_statuses: ['ok', 'skipped'], policy_violations: ['tone'] });
    expect(JSON.parse(r.signature)).toEqual({ alg: 'Ed25519', kid: 'k', sig: 's' });
  });

  it('trust debt: at_ms becomes ts_ms, crossings become threshold:direction', () => {
    const r = trustDebtRow({ event_id: 'e', agent_id: 'a', at_ms: 7, cause: 'block', before: 0.4, after: 0.55, level: 'restricted_mode', crossings: [{ threshold: 'restricted_mode', direction: 'up' }] }, 1);
    expect(r).toMatchObject({ ts_ms: 7, crossings: ['restricted_mode:up'], tenant: '' });
  });

  it('dlq: the failed source record is the identity; without source headers the DLQ record is', () => {
    const base = { dlq_topic: 'acgp.dlq', dlq_partition: 2, dlq_offset: '40', timestamp_ms: 100, value_bytes: 3 };
    expect(dlqRow({ ...base, source_topic: 'acgp.traces', source_partition: 1, source_offset: '7', source_ts_ms: 50, code: 'X' }, 1)).toMatchObject({
      source_topic: 'acgp.traces', source_partition: 1, source_offset: '7', source_ts_ms: 50, failed_at_ms: 100,
    });
    expect(dlqRow(base, 1)).toMatchObject({ source_topic: 'acgp.dlq', source_partition: 2, source_offset: '40', source_ts_ms: 100 });
  });
});

describe('JSON columns', () => {
  it('a decision\'s tripwires_json/rules_json and a verdict\'s metrics_json equal JSON.stringify of the input', () => {
    const d = decisionRow(decision, 1);
    expect(d.tripwires_json).toBe(JSON.stringify(decision.tripwires));
    expect(d.rules_json).toBe(JSON.stringify(decision.rules));
    const metrics = [{ name: 'clarity "c"', score: 0.8, status: 'ok', scorer: 'rule' }, { name: 'tone', score: null, status: 'skipped', detail: { why: 'no llm' } }];
    expect(verdictRow({ trace_id: 't', agent_id: 'a', intervention: 'ok', ctq: null, risk: null, metrics, verdict: {}, event_time_ms: 1 }, 1).metrics_json).toBe(JSON.stringify(metrics));
  });
});
