// Row builders of the finalization gate's §9.13 events (docs/analytics.md "Finalization gate"): what the gate
// stage publishes becomes a row; anything malformed is a non-retryable STEWARD_SINK_RECORD (the sink dead-letters it).
import { describe, expect, it } from 'vitest';
import { gateEventTable, gateJudgeResultRow, gateOutcomeRow } from '../../../../src/adapters/clickhouse/rows.js';
import type { FinalAlignmentJudgeResultEvent, FinalizationOutcomeEvent } from '../../../../src/engine/gate/types.js';
import { StewardError } from '../../../../src/errors.js';

const judged: FinalAlignmentJudgeResultEvent = {
  event: 'final_alignment_judge_result', event_id: 'fajr:e1', trace_id: 't1', agent_id: 'coder', tenant: 'acme', intervention: 'block',
  timestamp: '2023-11-14T22:13:20.000Z', ts_ms: 1_700_000_000_000, job_id: 'j1', session_id: null, user_id_hash: null, intent_id: 'CODE_FLOW_ANALYSIS',
  capability_profile_id: null, skill_id: null, quality_score: 0.3, verdict: 'FAIL', reason_codes: ['WRONG_ABSTRACTION_LEVEL'], fix_mode: 'REWRITE_ONLY',
  attempt_index: 0, action: 'rewrite', judged_by: 'llm', degraded: false, model_id: 'm', token_cost: null, latency_ms: 812,
};
const ended: FinalizationOutcomeEvent = {
  event: 'finalization_outcome', event_id: 'fo:e2', trace_id: 't2', agent_id: 'coder', tenant: 'acme', intervention: 'ok',
  timestamp: '2023-11-14T22:14:20.000Z', ts_ms: 1_700_000_060_000, job_id: 'j1', session_id: 's1', intent_id: null,
  final_verdict: 'pass', action: 'finalize', num_retries: 1, time_to_finalize_ms: 60_000, user_feedback: null,
};

const rejects = (fn: () => unknown, message: RegExp) => {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(StewardError);
  expect((err as StewardError).code).toBe('STEWARD_SINK_RECORD');
  expect((err as StewardError).retryable).toBe(false);
  expect((err as StewardError).message).toMatch(message);
};

describe('gate event rows', () => {
  it('routes by the event field', () => {
    expect(gateEventTable(judged)).toBe('gate_judge_results');
    expect(gateEventTable(ended)).toBe('gate_outcomes');
    expect(gateEventTable({ trace_id: 't' })).toBeUndefined();
    expect(gateEventTable(null)).toBeUndefined();
  });

  it('a judge result: nulls become \'\' (strings) or NULL (score, token cost), the flag 0/1', () => {
    expect(gateJudgeResultRow(judged, 5)).toEqual({
      event_id: 'fajr:e1', trace_id: 't1', job_id: 'j1', agent_id: 'coder', tenant: 'acme', session_id: '', user_id_hash: '',
      intent_id: 'CODE_FLOW_ANALYSIS', capability_profile_id: '', skill_id: '', quality_score: 0.3, verdict: 'FAIL',
      reason_codes: ['WRONG_ABSTRACTION_LEVEL'], fix_mode: 'REWRITE_ONLY', attempt_index: 0, action: 'rewrite', judged_by: 'llm',
      degraded: 0, model_id: 'm', token_cost: null, latency_ms: 812, ts_ms: 1_700_000_000_000, ingested_at_ms: 5,
    });
    expect(gateJudgeResultRow({ ...judged, verdict: null, fix_mode: null, degraded: true, token_cost: 0.5 }, 5)).toMatchObject({ verdict: '', fix_mode: '', degraded: 1, token_cost: 0.5 });
    // ts_ms absent: the ISO timestamp.
    const { ts_ms: _ts, ...noMs } = judged;
    expect(gateJudgeResultRow(noMs, 5).ts_ms).toBe(1_700_000_000_000);
  });

  it('an outcome: feedback_at_ms is 0 without feedback and the ingestion time with it (the table keeps the highest)', () => {
    expect(gateOutcomeRow(ended, 7)).toEqual({
      event_id: 'fo:e2', trace_id: 't2', job_id: 'j1', agent_id: 'coder', tenant: 'acme', session_id: 's1', intent_id: '',
      final_verdict: 'pass', action: 'finalize', num_retries: 1, time_to_finalize_ms: 60_000, user_feedback: '',
      ts_ms: 1_700_000_060_000, feedback_at_ms: 0, ingested_at_ms: 7,
    });
    expect(gateOutcomeRow({ ...ended, user_feedback: 'down' }, 9)).toMatchObject({ user_feedback: 'down', feedback_at_ms: 9 });
  });

  it.each([
    ['not an object', [1], /not a JSON object/],
    ['no job_id', { ...judged, job_id: undefined }, /job_id is required/],
    ['an unknown verdict', { ...judged, verdict: 'MAYBE' }, /verdict must be one of PASS, PASS_WITH_CAVEATS, FAIL or null/],
    ['an unknown fix mode', { ...judged, fix_mode: 'REWRITE' }, /fix_mode must be one of/],
    ['an unknown action', { ...judged, action: 'retry' }, /action must be one of/],
    ['a negative attempt', { ...judged, attempt_index: -1 }, /attempt_index must be a whole number/],
    ['a fractional attempt', { ...judged, attempt_index: 1.5 }, /attempt_index must be a whole number/],
    ['reason codes not strings', { ...judged, reason_codes: ['A', 1] }, /reason_codes must be an array of strings/],
    ['a non-numeric score', { ...judged, quality_score: 'high' }, /quality_score must be a finite number/],
    ['a negative latency', { ...judged, latency_ms: -3 }, /latency_ms must not be negative/],
    ['degraded not a boolean', { ...judged, degraded: 'yes' }, /degraded must be a boolean/],
    ['no time', { ...judged, ts_ms: undefined, timestamp: undefined }, /ts_ms is required/],
  ])('rejects a judge result with %s', (_what, record, message) => rejects(() => gateJudgeResultRow(record, 1), message));

  it.each([
    ['an unknown final verdict', { ...ended, final_verdict: 'PASS' }, /final_verdict must be one of pass, caveats, fail$/],
    ['no action', { ...ended, action: undefined }, /action must be one of/],
    ['a negative retry count', { ...ended, num_retries: -1 }, /num_retries must be a whole number/],
    ['unknown feedback', { ...ended, user_feedback: 'meh' }, /user_feedback must be one of up, down or null/],
    ['an empty agent_id', { ...ended, agent_id: '' }, /finalization_outcome: agent_id must be a string/],
  ])('rejects an outcome with %s', (_what, record, message) => rejects(() => gateOutcomeRow(record, 1), message));
});
