// The finalization gate's analytics (docs/analytics.md "Finalization gate") against real Kafka and ClickHouse:
// §9.13 events built as the gate stage publishes them go through the sink stage into gate_judge_results and
// gate_outcomes; each panel view is compared with numbers computed by hand from the fixture below (the
// arithmetic is in the comments), and `steward report gate` prints the alert states they imply.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FinalAlignmentJudgeResultEvent, FinalizationOutcomeEvent } from '../../../src/engine/gate/types.js';
import { run as reportCli } from '../../../src/cli/commands/report.js';
import { consumeMessages, services, waitFor } from '../setup/helpers.js';
import { caughtUp, setupEnv, type Env } from './fixtures.js';

// 2023-11-14T22:00:00Z and the next hour. Every fixture event is inside one of the two.
const H0 = 1_699_999_200_000;
const H1 = H0 + 3_600_000;
const HOUR0 = '2023-11-14 22:00:00';
const HOUR1 = '2023-11-14 23:00:00';
const MIN = 60_000;
const CFA = 'CODE_FLOW_ANALYSIS';
const RO = 'REPO_ORIENTATION';

type Verdict = FinalAlignmentJudgeResultEvent['verdict'];
type FixMode = FinalAlignmentJudgeResultEvent['fix_mode'];
type Action = FinalAlignmentJudgeResultEvent['action'];

interface Job {
  id: string;
  intent: string | null;
  session: string | null;
}

function judged(job: Job, attempt: number, ts: number, verdict: Verdict, codes: string[], fixMode: FixMode, action: Action,
  o: { judgedBy?: 'llm' | 'patterns'; latency?: number; tokens?: number | null; degraded?: boolean } = {}): FinalAlignmentJudgeResultEvent {
  return {
    event: 'final_alignment_judge_result',
    event_id: `fajr:${job.id}-${attempt}`,
    trace_id: `${job.id}-final-${attempt}`,
    agent_id: 'coder-1',
    tenant: 'acme',
    intervention: verdict === 'PASS' ? 'ok' : verdict === 'PASS_WITH_CAVEATS' ? 'nudge' : 'block',
    timestamp: new Date(ts).toISOString(),
    ts_ms: ts,
    job_id: job.id,
    session_id: job.session,
    user_id_hash: 'a'.repeat(64),
    intent_id: job.intent,
    capability_profile_id: 'cp-default',
    skill_id: 'code-explainer',
    quality_score: verdict === 'PASS' ? 0.9 : verdict === 'PASS_WITH_CAVEATS' ? 0.7 : verdict === 'FAIL' ? 0.3 : null,
    verdict,
    reason_codes: codes,
    fix_mode: fixMode,
    attempt_index: attempt,
    action,
    judged_by: o.judgedBy ?? 'llm',
    degraded: o.degraded ?? false,
    model_id: o.judgedBy === 'patterns' ? null : 'judge-model-1',
    token_cost: o.tokens ?? null,
    latency_ms: o.latency ?? 0,
  };
}

function outcome(job: Job, attempt: number, ts: number, finalVerdict: 'pass' | 'caveats' | 'fail', action: Action, startMs: number): FinalizationOutcomeEvent {
  return {
    event: 'finalization_outcome',
    event_id: `fo:${job.id}-${attempt}`,
    trace_id: `${job.id}-final-${attempt}`,
    agent_id: 'coder-1',
    tenant: 'acme',
    intervention: finalVerdict === 'pass' ? 'ok' : action === 'block' ? 'block' : 'flag',
    timestamp: new Date(ts).toISOString(),
    ts_ms: ts,
    job_id: job.id,
    session_id: job.session,
    intent_id: job.intent,
    final_verdict: finalVerdict,
    action,
    num_retries: attempt,
    time_to_finalize_ms: ts - startMs,
    user_feedback: null,
  };
}

const J1: Job = { id: 'J1', intent: CFA, session: 'S1' };
const J2: Job = { id: 'J2', intent: CFA, session: 'S1' };
const J3: Job = { id: 'J3', intent: CFA, session: 'S2' };
const J4: Job = { id: 'J4', intent: CFA, session: null };
const J5: Job = { id: 'J5', intent: RO, session: 'S3' };
const J6: Job = { id: 'J6', intent: RO, session: null };
const J7: Job = { id: 'J7', intent: CFA, session: 'S4' };
const J8: Job = { id: 'J8', intent: null, session: null };

// The fixture (t = minutes after the hour):
//  hour H0  J1 CFA S1   a0 t1  FAIL [WRONG_ABSTRACTION_LEVEL, MISSING_REQUIRED_ELEMENTS] REWRITE_ONLY rewrite  1000 ms 0.02
//                       a1 t2  PASS []  (judge's fix mode REWRITE_ONLY) finalize                               2000 ms 0.03   → pass, 1 retry
//           J2 CFA S1   a0 t5  PASS [] finalize                                                                500 ms  —      → pass, 0 retries
//           J3 CFA S2   a0 t10 FAIL [WRONG_ARTIFACT_TYPE] NEEDS_NEW_EVIDENCE replan                            1500 ms 0.02
//                       a1 t11 FAIL [WRONG_ARTIFACT_TYPE, UNSUPPORTED_SPECIFICS] NEEDS_NEW_EVIDENCE replan      1500 ms 0.02
//                       a2 t12 PASS_WITH_CAVEATS [OVERLY_GENERIC] REWRITE_ONLY finalize_with_limitations       3000 ms 0.04   → caveats, 2 retries
//           J4 CFA —    a0 t15 PASS_WITH_CAVEATS [STRUCTURE_OR_CLARITY_ISSUES] REWRITE_ONLY rewrite             800 ms  —      (still open)
//           J5 RO  S3   a0 t20 FAIL [NEEDS_CLARIFICATION] NEEDS_USER_CLARIFICATION ask_user                     700 ms  0.01
//                       a1 t21 FAIL [WRONG_ABSTRACTION_LEVEL] REWRITE_ONLY finalize_with_limitations             900 ms  0.01   → fail, 1 retry, feedback down
//           J6 RO  —    a0 t25 FAIL [SAFETY_OR_POLICY_VIOLATION] (tier 1: patterns, no fix mode) block          0 ms   —      → fail, 0 retries
//  hour H1  J2 CFA S1   a1 t5  PASS [] finalize (a second final answer: its outcome supersedes J2's first)       600 ms  —      → pass, 1 retry
//           J7 CFA S4   a0 t10 FAIL [WRONG_ABSTRACTION_LEVEL] REWRITE_ONLY rewrite                              1200 ms 0.02
//                       a1 t11 no verdict (degraded: judge timeout) finalize_with_limitations                    10000 ms —     → fail, 1 retry
//           J8 —   —    a0 t15 PASS [] finalize                                                                  400 ms  0.01   → pass, 0 retries
const JUDGED: FinalAlignmentJudgeResultEvent[] = [
  judged(J1, 0, H0 + 1 * MIN, 'FAIL', ['WRONG_ABSTRACTION_LEVEL', 'MISSING_REQUIRED_ELEMENTS'], 'REWRITE_ONLY', 'rewrite', { latency: 1000, tokens: 0.02 }),
  judged(J1, 1, H0 + 2 * MIN, 'PASS', [], 'REWRITE_ONLY', 'finalize', { latency: 2000, tokens: 0.03 }),
  judged(J2, 0, H0 + 5 * MIN, 'PASS', [], null, 'finalize', { latency: 500 }),
  judged(J3, 0, H0 + 10 * MIN, 'FAIL', ['WRONG_ARTIFACT_TYPE'], 'NEEDS_NEW_EVIDENCE', 'replan', { latency: 1500, tokens: 0.02 }),
  judged(J3, 1, H0 + 11 * MIN, 'FAIL', ['WRONG_ARTIFACT_TYPE', 'UNSUPPORTED_SPECIFICS'], 'NEEDS_NEW_EVIDENCE', 'replan', { latency: 1500, tokens: 0.02 }),
  judged(J3, 2, H0 + 12 * MIN, 'PASS_WITH_CAVEATS', ['OVERLY_GENERIC'], 'REWRITE_ONLY', 'finalize_with_limitations', { latency: 3000, tokens: 0.04 }),
  judged(J4, 0, H0 + 15 * MIN, 'PASS_WITH_CAVEATS', ['STRUCTURE_OR_CLARITY_ISSUES'], 'REWRITE_ONLY', 'rewrite', { latency: 800 }),
  judged(J5, 0, H0 + 20 * MIN, 'FAIL', ['NEEDS_CLARIFICATION'], 'NEEDS_USER_CLARIFICATION', 'ask_user', { latency: 700, tokens: 0.01 }),
  judged(J5, 1, H0 + 21 * MIN, 'FAIL', ['WRONG_ABSTRACTION_LEVEL'], 'REWRITE_ONLY', 'finalize_with_limitations', { latency: 900, tokens: 0.01 }),
  judged(J6, 0, H0 + 25 * MIN, 'FAIL', ['SAFETY_OR_POLICY_VIOLATION'], null, 'block', { judgedBy: 'patterns', latency: 0 }),
  judged(J2, 1, H1 + 5 * MIN, 'PASS', [], null, 'finalize', { latency: 600 }),
  judged(J7, 0, H1 + 10 * MIN, 'FAIL', ['WRONG_ABSTRACTION_LEVEL'], 'REWRITE_ONLY', 'rewrite', { latency: 1200, tokens: 0.02 }),
  judged(J7, 1, H1 + 11 * MIN, null, [], null, 'finalize_with_limitations', { latency: 10_000, degraded: true }),
  judged(J8, 0, H1 + 15 * MIN, 'PASS', [], null, 'finalize', { latency: 400, tokens: 0.01 }),
];

const OUTCOMES: FinalizationOutcomeEvent[] = [
  outcome(J1, 1, H0 + 2 * MIN, 'pass', 'finalize', H0 + 1 * MIN),
  outcome(J2, 0, H0 + 5 * MIN, 'pass', 'finalize', H0 + 5 * MIN),
  outcome(J3, 2, H0 + 12 * MIN, 'caveats', 'finalize_with_limitations', H0 + 10 * MIN),
  outcome(J5, 1, H0 + 21 * MIN, 'fail', 'finalize_with_limitations', H0 + 20 * MIN),
  outcome(J6, 0, H0 + 25 * MIN, 'fail', 'block', H0 + 25 * MIN),
  outcome(J2, 1, H1 + 5 * MIN, 'pass', 'finalize', H0 + 5 * MIN),
  outcome(J7, 1, H1 + 11 * MIN, 'fail', 'finalize_with_limitations', H1 + 10 * MIN),
  outcome(J8, 0, H1 + 15 * MIN, 'pass', 'finalize', H1 + 15 * MIN),
];

const J5_OUTCOME = OUTCOMES[3]!;

/** UInt64 columns arrive as strings from 18.16: numbers for comparison. */
const numeric = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v]));

describe('finalization gate analytics views (real Kafka + ClickHouse)', () => {
  let env: Env;
  const view = async (name: string, orderBy: string) =>
    (await env.store.query<Record<string, unknown>>(`SELECT * FROM ${env.store.table(name)} ORDER BY ${orderBy}`)).map(numeric);

  beforeAll(async () => {
    env = await setupEnv('gateviews', { partitions: 2 });
    await env.startSink();
    const send = (events: object[]) => env.produce(env.topics.gate, events.map((e) => ({ key: 'coder-1', value: JSON.stringify(e) })));
    await send([...JUDGED, ...OUTCOMES]);
    // Redelivery: J1's and J3's records again (the sink and the gate stage are at-least-once).
    await send([JUDGED[0]!, JUDGED[1]!, JUDGED[3]!, OUTCOMES[0]!, OUTCOMES[2]!]);
    // The user's thumbs-down for J5 (the gate stage re-publishes the outcome with the same event id), then a late
    // redelivered copy of the original without feedback: the feedback must stay.
    await send([{ ...J5_OUTCOME, user_feedback: 'down' }, J5_OUTCOME]);
    // Malformed §9.13 events are dead-lettered (an unknown verdict; a negative retry count), and a gate record
    // of another kind still goes to gate_events only.
    await send([
      { ...JUDGED[0]!, event_id: 'fajr:bad-1', verdict: 'MAYBE' },
      { ...OUTCOMES[0]!, event_id: 'fo:bad-2', num_retries: -1 },
      { trace_id: 'other-1', agent_id: 'coder-1', tenant: 'acme', intervention: 'ok', ts_ms: H0 },
    ]);
    await waitFor(async () => (await env.count('v_gate_judge_results')).n >= JUDGED.length && (await env.count('v_gate_outcomes')).n >= OUTCOMES.length, {
      timeoutMs: 45_000,
      message: 'gate rows in ClickHouse',
    });
    await waitFor(() => caughtUp(`${env.prefix}-sink`, [env.topics.gate]), { timeoutMs: 30_000, message: 'gate topic consumed' });
  });
  afterAll(async () => {
    await env?.close();
  });

  it('stores each event once (redeliveries collapse), keeps the feedback, dead-letters malformed events', async () => {
    expect(await env.count('v_gate_judge_results')).toEqual({ n: 14, u: 14 }); // 14 results, one trace each
    expect(await env.count('v_gate_outcomes')).toEqual({ n: 8, u: 8 }); // 8 outcome events (J2 has two)
    const j5 = await env.store.query<{ user_feedback: string; n: string }>(
      `SELECT user_feedback, count() AS n FROM ${env.store.table('v_gate_outcomes')} WHERE job_id = 'J5' GROUP BY user_feedback`,
    );
    expect(j5).toEqual([{ user_feedback: 'down', n: '1' }]);
    const row = (await view('v_gate_judge_results', 'ts_ms LIMIT 1'))[0]!;
    expect(row).toMatchObject({
      event_id: 'fajr:J1-0', trace_id: 'J1-final-0', job_id: 'J1', agent_id: 'coder-1', tenant: 'acme', session_id: 'S1',
      user_id_hash: 'a'.repeat(64), intent_id: CFA, capability_profile_id: 'cp-default', skill_id: 'code-explainer', quality_score: 0.3,
      verdict: 'FAIL', reason_codes: ['WRONG_ABSTRACTION_LEVEL', 'MISSING_REQUIRED_ELEMENTS'], fix_mode: 'REWRITE_ONLY', attempt_index: 0,
      action: 'rewrite', judged_by: 'llm', degraded: 0, model_id: 'judge-model-1', token_cost: 0.02, latency_ms: 1000, ts_ms: H0 + MIN,
    });
    // Absent strings are '', absent numbers NULL (J7's degraded attempt).
    const j7 = (await view('v_gate_judge_results', 'ts_ms')).find((r) => r.event_id === 'fajr:J7-1')!;
    expect(j7).toMatchObject({ verdict: '', fix_mode: '', quality_score: null, token_cost: null, degraded: 1 });
    // The two malformed events are in the DLQ with the sink's reason; the generic record is in gate_events only.
    const dlq = await consumeMessages(env.topics.dlq, 2, { timeoutMs: 20_000 });
    expect(dlq.map((m) => m.headers?.['x-steward-error-code']?.toString())).toEqual(['STEWARD_SINK_RECORD', 'STEWARD_SINK_RECORD']);
    expect(dlq.map((m) => m.headers?.['x-steward-error-message']?.toString()).sort()).toEqual([
      expect.stringMatching(/^final_alignment_judge_result: verdict must be one of/),
      expect.stringMatching(/^finalization_outcome: num_retries must be a whole number/),
    ]);
    expect(await env.count('v_gate_judge_results', "event_id LIKE '%bad%'")).toEqual({ n: 0, u: 0 });
    expect(await env.count('v_gate_outcomes', "event_id LIKE '%bad%'")).toEqual({ n: 0, u: 0 });
    expect(await env.count('v_gate_events', "trace_id = 'other-1'")).toEqual({ n: 1, u: 1 });
  });

  it('v_gate_jobs: one row per ended job, its latest outcome', async () => {
    const jobs = await view('v_gate_jobs', 'job_id');
    expect(jobs.map((j) => [j.job_id, j.intent_id, j.final_verdict, j.action, j.num_retries, j.user_feedback, j.ended_ms])).toEqual([
      ['J1', CFA, 'pass', 'finalize', 1, '', H0 + 2 * MIN],
      ['J2', CFA, 'pass', 'finalize', 1, '', H1 + 5 * MIN], // the second outcome (attempt 1, hour H1) supersedes the first
      ['J3', CFA, 'caveats', 'finalize_with_limitations', 2, '', H0 + 12 * MIN],
      ['J5', RO, 'fail', 'finalize_with_limitations', 1, 'down', H0 + 21 * MIN],
      ['J6', RO, 'fail', 'block', 0, '', H0 + 25 * MIN],
      ['J7', CFA, 'fail', 'finalize_with_limitations', 1, '', H1 + 11 * MIN],
      ['J8', '', 'pass', 'finalize', 0, '', H1 + 15 * MIN],
    ]); // J4 has not ended
  });

  it('v_gate_verdict_rate', async () => {
    expect(await view('v_gate_verdict_rate', 'hour, intent_id')).toEqual([
      // H0 CFA: J1a0 F, J1a1 P, J2a0 P, J3a0 F, J3a1 F, J3a2 C, J4a0 C = 7: P 2, C 2, F 3 → 2/7 = 0.2857, 2/7, 3/7 = 0.4286
      { hour: HOUR0, intent_id: CFA, results: 7, pass: 2, pass_with_caveats: 2, fail: 3, no_verdict: 0, pass_share: 0.2857, caveats_share: 0.2857, fail_share: 0.4286 },
      // H0 RO: J5a0 F, J5a1 F, J6a0 F = 3: F 3 → 3/3 = 1
      { hour: HOUR0, intent_id: RO, results: 3, pass: 0, pass_with_caveats: 0, fail: 3, no_verdict: 0, pass_share: 0, caveats_share: 0, fail_share: 1 },
      // H1 no intent: J8a0 P = 1
      { hour: HOUR1, intent_id: '', results: 1, pass: 1, pass_with_caveats: 0, fail: 0, no_verdict: 0, pass_share: 1, caveats_share: 0, fail_share: 0 },
      // H1 CFA: J2a1 P, J7a0 F, J7a1 none = 3 → 1/3 = 0.3333 each for P and F
      { hour: HOUR1, intent_id: CFA, results: 3, pass: 1, pass_with_caveats: 0, fail: 1, no_verdict: 1, pass_share: 0.3333, caveats_share: 0, fail_share: 0.3333 },
    ]);
  });

  it('v_gate_reason_codes', async () => {
    expect(await view('v_gate_reason_codes', 'hour, intent_id, reason_code')).toEqual([
      // H0 CFA, 7 results: MISSING_REQUIRED_ELEMENTS J1a0 → 1/7 = 0.1429; OVERLY_GENERIC J3a2; STRUCTURE_OR_CLARITY_ISSUES J4a0;
      // UNSUPPORTED_SPECIFICS J3a1; WRONG_ABSTRACTION_LEVEL J1a0; WRONG_ARTIFACT_TYPE J3a0, J3a1 → 2/7 = 0.2857
      { hour: HOUR0, intent_id: CFA, reason_code: 'MISSING_REQUIRED_ELEMENTS', times: 1, results: 7, share: 0.1429 },
      { hour: HOUR0, intent_id: CFA, reason_code: 'OVERLY_GENERIC', times: 1, results: 7, share: 0.1429 },
      { hour: HOUR0, intent_id: CFA, reason_code: 'STRUCTURE_OR_CLARITY_ISSUES', times: 1, results: 7, share: 0.1429 },
      { hour: HOUR0, intent_id: CFA, reason_code: 'UNSUPPORTED_SPECIFICS', times: 1, results: 7, share: 0.1429 },
      { hour: HOUR0, intent_id: CFA, reason_code: 'WRONG_ABSTRACTION_LEVEL', times: 1, results: 7, share: 0.1429 },
      { hour: HOUR0, intent_id: CFA, reason_code: 'WRONG_ARTIFACT_TYPE', times: 2, results: 7, share: 0.2857 },
      // H0 RO, 3 results: NEEDS_CLARIFICATION J5a0, SAFETY_OR_POLICY_VIOLATION J6a0, WRONG_ABSTRACTION_LEVEL J5a1 → 1/3 each
      { hour: HOUR0, intent_id: RO, reason_code: 'NEEDS_CLARIFICATION', times: 1, results: 3, share: 0.3333 },
      { hour: HOUR0, intent_id: RO, reason_code: 'SAFETY_OR_POLICY_VIOLATION', times: 1, results: 3, share: 0.3333 },
      { hour: HOUR0, intent_id: RO, reason_code: 'WRONG_ABSTRACTION_LEVEL', times: 1, results: 3, share: 0.3333 },
      // H1 CFA, 3 results: WRONG_ABSTRACTION_LEVEL J7a0 → 1/3; H1 no intent: J8 has no codes, so no row
      { hour: HOUR1, intent_id: CFA, reason_code: 'WRONG_ABSTRACTION_LEVEL', times: 1, results: 3, share: 0.3333 },
    ]);
  });

  it('v_gate_far_away', async () => {
    expect(await view('v_gate_far_away', 'hour, intent_id')).toEqual([
      // CFA sessions first seen in H0: S1 (J1a0 WRONG_ABSTRACTION_LEVEL; J2 too, its H1 attempt included), S2 (J3
      // WRONG_ARTIFACT_TYPE), J4 (no session_id: the job; no far-away code) → 2 of 3 = 0.6667
      { hour: HOUR0, intent_id: CFA, sessions: 3, far_away_sessions: 2, wrong_abstraction_sessions: 1, wrong_artifact_sessions: 1, far_away_index: 0.6667 },
      // RO: S3 (J5a1 WRONG_ABSTRACTION_LEVEL), J6 (SAFETY_OR_POLICY_VIOLATION only) → 1 of 2 = 0.5
      { hour: HOUR0, intent_id: RO, sessions: 2, far_away_sessions: 1, wrong_abstraction_sessions: 1, wrong_artifact_sessions: 0, far_away_index: 0.5 },
      // H1: J8 (no intent, no session, no code) → 0 of 1; CFA S4 (J7a0 WRONG_ABSTRACTION_LEVEL) → 1 of 1
      { hour: HOUR1, intent_id: '', sessions: 1, far_away_sessions: 0, wrong_abstraction_sessions: 0, wrong_artifact_sessions: 0, far_away_index: 0 },
      { hour: HOUR1, intent_id: CFA, sessions: 1, far_away_sessions: 1, wrong_abstraction_sessions: 1, wrong_artifact_sessions: 0, far_away_index: 1 },
    ]);
  });

  it('v_gate_replan_effectiveness', async () => {
    expect(await view('v_gate_replan_effectiveness', 'hour, intent_id')).toEqual([
      // H0 CFA jobs J1, J3 (J2 ended in H1). First attempt FAIL, with a repair offered (rewrite, replan): both. Attempt 1 PASS: J1 → 1/2 = 0.5. Ended
      // finalize_with_limitations/block: J3 → 1/2. Repaired (num_retries ≥ 1): J1 (1), J3 (2); ended pass: J1 → 1/2.
      // Retries 1 + 2 = 3 over 2 jobs = 1.5
      {
        hour: HOUR0, intent_id: CFA, jobs: 2, first_failed_jobs: 2, passed_by_attempt_1: 1, still_fail_after_max: 1, passed_by_attempt_1_share: 0.5,
        still_fail_share: 0.5, repaired_jobs: 2, repaired_passed: 1, replan_success: 0.5, retries: 3, avg_retries: 1.5,
      },
      // H0 RO jobs J5, J6. First FAIL with a repair offered: J5 (ask_user) only — J6's attempt-0 FAIL is a tier-1
      // block, no retry offered, so it is neither first-failed nor "still FAIL after max retries" (migration 10).
      // J5a1 FAIL → 0/1 passed; J5 finalize_with_limitations → 1/1. Repaired: J5 (fail) → 0/1. Retries 1 + 0 = 1 over 2 = 0.5
      {
        hour: HOUR0, intent_id: RO, jobs: 2, first_failed_jobs: 1, passed_by_attempt_1: 0, still_fail_after_max: 1, passed_by_attempt_1_share: 0,
        still_fail_share: 1, repaired_jobs: 1, repaired_passed: 0, replan_success: 0, retries: 1, avg_retries: 0.5,
      },
      // H1 no intent: J8 passed at once: no first-attempt failure, no repair (shares NULL), 0 retries
      {
        hour: HOUR1, intent_id: '', jobs: 1, first_failed_jobs: 0, passed_by_attempt_1: 0, still_fail_after_max: 0, passed_by_attempt_1_share: null,
        still_fail_share: null, repaired_jobs: 0, repaired_passed: 0, replan_success: null, retries: 0, avg_retries: 0,
      },
      // H1 CFA jobs J2 (latest outcome: attempt 1), J7. First FAIL: J7 only; its attempt 1 has no verdict → 0/1 passed;
      // J7 finalize_with_limitations → 1/1. Repaired: J2 (pass), J7 (fail) → 1/2. Retries 1 + 1 = 2 over 2 = 1
      {
        hour: HOUR1, intent_id: CFA, jobs: 2, first_failed_jobs: 1, passed_by_attempt_1: 0, still_fail_after_max: 1, passed_by_attempt_1_share: 0,
        still_fail_share: 1, repaired_jobs: 2, repaired_passed: 1, replan_success: 0.5, retries: 2, avg_retries: 1,
      },
    ]);
  });

  it('v_gate_fix_modes', async () => {
    expect(await view('v_gate_fix_modes', 'hour, intent_id')).toEqual([
      // H0 CFA, FAIL/PASS_WITH_CAVEATS with a fix mode: J1a0 RO(rewrite), J3a0 NNE, J3a1 NNE, J3a2 RW, J4a0 RW = 5
      // (J1a1's fix mode is on a PASS: not a repair) → rewrite 3/5 = 0.6, evidence 2/5 = 0.4
      { hour: HOUR0, intent_id: CFA, repairs: 5, rewrite_only: 3, needs_new_evidence: 2, needs_user_clarification: 0, rewrite_only_share: 0.6, needs_new_evidence_share: 0.4, needs_user_clarification_share: 0 },
      // H0 RO: J5a0 NEEDS_USER_CLARIFICATION, J5a1 REWRITE_ONLY (J6a0 has none) → 1/2 each
      { hour: HOUR0, intent_id: RO, repairs: 2, rewrite_only: 1, needs_new_evidence: 0, needs_user_clarification: 1, rewrite_only_share: 0.5, needs_new_evidence_share: 0, needs_user_clarification_share: 0.5 },
      // H1 CFA: J7a0 REWRITE_ONLY (J7a1 has no verdict) → 1/1; J8 passed: no row
      { hour: HOUR1, intent_id: CFA, repairs: 1, rewrite_only: 1, needs_new_evidence: 0, needs_user_clarification: 0, rewrite_only_share: 1, needs_new_evidence_share: 0, needs_user_clarification_share: 0 },
    ]);
  });

  it('v_gate_cost', async () => {
    expect(await view('v_gate_cost', 'hour, intent_id')).toEqual([
      // H0 CFA: 7 LLM results, attempts ≥ 1: J1a1, J3a1, J3a2 = 3. Latency (1000+2000+500+1500+1500+3000+800)/7 = 10300/7
      // = 1471.429; p95 = sorted[⌊0.95·7⌋ = 6] of [500,800,1000,1500,1500,2000,3000] = 3000; extra 2000+1500+3000 = 6500.
      // Tokens 0.02+0.03+0.02+0.02+0.04 = 0.13, extra 0.03+0.02+0.04 = 0.09
      {
        hour: HOUR0, intent_id: CFA, results: 7, retries: 3, judge_calls: 7, extra_judge_calls: 3, avg_latency_ms: 1471.429, p95_latency_ms: 3000,
        extra_latency_ms: 6500, token_cost_total: 0.13, extra_token_cost: 0.09,
      },
      // H0 RO: J5a0 (700), J5a1 (900) by the LLM, J6a0 by patterns: 2 calls, 1 extra; (700+900)/2 = 800; p95 = sorted[⌊1.9⌋ = 1] = 900;
      // extra 900; tokens 0.01+0.01 = 0.02, extra 0.01
      {
        hour: HOUR0, intent_id: RO, results: 3, retries: 1, judge_calls: 2, extra_judge_calls: 1, avg_latency_ms: 800, p95_latency_ms: 900,
        extra_latency_ms: 900, token_cost_total: 0.02, extra_token_cost: 0.01,
      },
      // H1 no intent: J8a0 400 ms, 0.01, no retry → no extra token cost reported (NULL)
      {
        hour: HOUR1, intent_id: '', results: 1, retries: 0, judge_calls: 1, extra_judge_calls: 0, avg_latency_ms: 400, p95_latency_ms: 400,
        extra_latency_ms: 0, token_cost_total: 0.01, extra_token_cost: null,
      },
      // H1 CFA: J2a1 600, J7a0 1200, J7a1 10000; retries J2a1, J7a1 = 2; (600+1200+10000)/3 = 3933.333; p95 = sorted[⌊2.85⌋ = 2]
      // = 10000; extra 600+10000 = 10600; tokens 0.02 (J7a0), the retries reported none → NULL
      {
        hour: HOUR1, intent_id: CFA, results: 3, retries: 2, judge_calls: 3, extra_judge_calls: 2, avg_latency_ms: 3933.333, p95_latency_ms: 10_000,
        extra_latency_ms: 10_600, token_cost_total: 0.02, extra_token_cost: null,
      },
    ]);
  });

  describe('steward report gate', () => {
    const cli = async (...args: string[]) => {
      let out = '';
      const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        out += chunk.toString();
        return true;
      });
      try {
        const code = await reportCli(['gate', '--url', services().clickhouseUrl, '--database', env.database, ...args]);
        return { code, out };
      } finally {
        spy.mockRestore();
      }
    };
    const states = (out: string) =>
      (JSON.parse(out) as { alerts: { alert: string; intent_id: string; value: number; firing: boolean; basis: number }[] }).alerts.map((a) => [a.alert, a.intent_id, a.value, a.firing, a.basis]);

    it('last hour (22:30–23:30]: only H1 events; CFA\'s WRONG_ABSTRACTION_LEVEL share fires', async () => {
      const { code, out } = await cli('--now', new Date(H1 + 30 * MIN).toISOString(), '--json');
      expect(code).toBe(0);
      expect(states(out)).toEqual([
        // judge results: '' J8 → 0/1; CFA J2a1, J7a0 (WAL), J7a1 → 1/3 = 0.3333 > 0.15
        ['wrong_abstraction_level_share', '', 0, false, 1],
        ['wrong_abstraction_level_share', CFA, 0.3333, true, 3],
        // jobs ended in the window: J2, J7 (CFA), J8 (''). CFA repaired J2 pass, J7 fail → 1/2 = 0.5, not < 0.5
        ['replan_success', CFA, 0.5, false, 2],
        // average retries: '' 0/1 = 0; CFA (1 + 1)/2 = 1 ≤ 1.3
        ['avg_retries', '', 0, false, 1],
        ['avg_retries', CFA, 1, false, 2],
      ]);
      const report = JSON.parse(out) as { panels: { name: string; rows: unknown[] }[]; thresholds: unknown; window_ms: number };
      expect(report.thresholds).toEqual({ farAwayMax: 0.15, replanMin: 0.5, retriesMax: 1.3 });
      expect(report.window_ms).toBe(3_600_000);
      // The panels are the views' rows of the hours since 24 h before --now: the whole fixture.
      expect(report.panels.map((p) => [p.name, p.rows.length])).toEqual([
        ['verdict-rate', 4], ['reason-codes', 10], ['far-away', 4], ['replan-effectiveness', 4], ['fix-modes', 3], ['cost', 4],
      ]);
    });

    it('a 2 h window with other thresholds: RO\'s replan success and CFA\'s retries fire', async () => {
      const { code, out } = await cli('--now', String(H1 + 30 * MIN), '--window', '2h', '--replan-min', '0.4', '--retries-max', '1.2', '--far-away-max', '0.25', '--json');
      expect(code).toBe(0);
      expect(states(out)).toEqual([
        // all 14 results: '' 0/1; CFA J1a0, J7a0 of 10 = 0.2 ≤ 0.25; RO J5a1 of 3 = 0.3333 > 0.25
        ['wrong_abstraction_level_share', '', 0, false, 1],
        ['wrong_abstraction_level_share', CFA, 0.2, false, 10],
        ['wrong_abstraction_level_share', RO, 0.3333, true, 3],
        // CFA repaired J1, J2 (pass), J3, J7 → 2/4 = 0.5 ≥ 0.4; RO repaired J5 (fail) → 0/1 < 0.4
        ['replan_success', CFA, 0.5, false, 4],
        ['replan_success', RO, 0, true, 1],
        // retries: '' 0; CFA J1 1 + J2 1 + J3 2 + J7 1 = 5 over 4 = 1.25 > 1.2; RO (1 + 0)/2 = 0.5
        ['avg_retries', '', 0, false, 1],
        ['avg_retries', CFA, 1.25, true, 4],
        ['avg_retries', RO, 0.5, false, 2],
      ]);
    });

    it('prints the panels and the alert states as text, exit 0 while an alert fires', async () => {
      const { code, out } = await cli('--now', new Date(H1 + 30 * MIN).toISOString());
      expect(code).toBe(0);
      for (const v of ['v_gate_verdict_rate', 'v_gate_reason_codes', 'v_gate_far_away', 'v_gate_replan_effectiveness', 'v_gate_fix_modes', 'v_gate_cost']) expect(out).toContain(`(${v})`);
      expect(out).toContain('== Alerts (1 firing)');
      expect(out).toMatch(/wrong_abstraction_level_share\s+CODE_FLOW_ANALYSIS\s+0\.3333\s+> 0\.15\s+FIRING\s+3 judge results/);
      expect(out).toMatch(/avg_retries\s+\(none\)\s+0\s+> 1\.3\s+ok/);
    });

    it('rejects a bad window or threshold (usage error)', async () => {
      await expect(cli('--window', 'soon')).rejects.toThrow(/--window must be a duration/);
      await expect(cli('--replan-min=-1')).rejects.toThrow(/--replan-min must be a non-negative number/);
    });
  });
});
