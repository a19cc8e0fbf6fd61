/**
 * The gate's records (docs/gate.md "Events"): the §9.13 events `final_alignment_judge_result` (one per
 * decided attempt) and `finalization_outcome` (when the job ends), each with the envelope the acgp.gate
 * sink reads (trace_id, agent_id, tenant, intervention, ts_ms), and the REPLAN_TRIGGERED ledger draft of
 * every repair directive (spec-decisions D18).
 */
import { createHash } from 'node:crypto';
import type { LedgerDraft } from '../ledger/types.js';
import type { GateAction } from './codes.js';
import type { Trace } from '../types.js';
import type { EventFacts, FinalAlignmentJudgeResultEvent, FinalizationOutcomeEvent, GateOutcome } from './types.js';

/**
 * ISO time of the event; an out-of-range time (never from a parsed trace) reads as the epoch instead of throwing.
 * The last one is kept: both events of an answer (and a chunk's answers of the same millisecond) share it.
 */
let isoMs = NaN;
let isoText = '';
function iso(ms: number): string {
  if (ms !== isoMs) {
    isoText = new Date(Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? ms : 0).toISOString();
    isoMs = ms;
  }
  return isoText;
}
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** SHA-256 (hex) of the trace's `user_id`; the raw id never leaves the gate. */
export function userIdHash(userId: unknown): string | null {
  if (typeof userId !== 'string' && typeof userId !== 'number') return null;
  return createHash('sha256').update(String(userId)).digest('hex');
}

type Core = Omit<GateOutcome, 'events' | 'ledger'>;

/** The event facts of a final answer's trace and its judge call. */
export function eventFacts(trace: Trace, judge: { model: string | null; latencyMs: number; tokenCost?: number | null }): EventFacts {
  return {
    session_id: str(trace.session_id),
    intent_id: str(trace.intent_id),
    user_id_hash: userIdHash(trace.user_id),
    capability_profile_id: str(trace.capability_profile_id),
    model_id: judge.model,
    token_cost: judge.tokenCost ?? null,
    latency_ms: Math.round(judge.latencyMs),
  };
}

export function judgeResultEvent(o: Core, f: EventFacts, nowMs: number): FinalAlignmentJudgeResultEvent {
  return {
    event: 'final_alignment_judge_result',
    // The envelope (GateEventEnvelope) written out rather than spread in: one object per event, not two.
    event_id: `fajr:${o.event_id}`,
    trace_id: o.trace_id,
    agent_id: o.agent_id,
    tenant: o.tenant,
    intervention: o.intervention,
    timestamp: iso(nowMs),
    ts_ms: nowMs,
    job_id: o.job_id,
    session_id: f.session_id,
    intent_id: f.intent_id,
    user_id_hash: f.user_id_hash,
    capability_profile_id: f.capability_profile_id,
    skill_id: o.skill_id,
    quality_score: o.quality_score,
    verdict: o.verdict,
    reason_codes: o.reason_codes,
    fix_mode: o.fix_mode,
    attempt_index: o.attempt_index,
    action: o.action,
    judged_by: o.judged_by,
    degraded: o.degraded,
    model_id: f.model_id,
    token_cost: f.token_cost,
    latency_ms: f.latency_ms,
  };
}

/** Jobs end with finalize, finalize_with_limitations or block; repairs keep the job open. */
export const ENDS_JOB: ReadonlySet<GateAction> = new Set(['finalize', 'finalize_with_limitations', 'block']);

export function outcomeEvent(o: Core, f: EventFacts, nowMs: number, jobStartMs: number): FinalizationOutcomeEvent | null {
  if (!ENDS_JOB.has(o.action)) return null;
  const final_verdict = o.action === 'block' || o.verdict === 'FAIL' || o.verdict === null ? 'fail' : o.verdict === 'PASS' ? 'pass' : 'caveats';
  return {
    event: 'finalization_outcome',
    event_id: `fo:${o.event_id}`,
    trace_id: o.trace_id,
    agent_id: o.agent_id,
    tenant: o.tenant,
    intervention: o.intervention,
    timestamp: iso(nowMs),
    ts_ms: nowMs,
    job_id: o.job_id,
    session_id: f.session_id,
    intent_id: f.intent_id,
    final_verdict,
    action: o.action,
    num_retries: o.attempt_index,
    time_to_finalize_ms: Math.max(0, nowMs - jobStartMs),
    user_feedback: null,
  };
}

/** D18: a rewrite/replan/ask_user directive is a REPLAN_TRIGGERED entry of the job; its id is stable per event. */
export function replanLedgerDraft(o: Core, nowMs: number): LedgerDraft | null {
  if (o.action !== 'rewrite' && o.action !== 'replan' && o.action !== 'ask_user') return null;
  const ts = Math.trunc(nowMs);
  return {
    entry_id: `rt:gate:${o.event_id}`,
    agent_id: o.agent_id,
    tenant: o.tenant,
    ts_ms: Number.isSafeInteger(ts) && ts >= 0 ? ts : 0,
    type: 'REPLAN_TRIGGERED',
    payload: {
      source: 'finalization_gate',
      trace_id: o.trace_id,
      job_id: o.job_id,
      attempt_index: o.attempt_index,
      action: o.action,
      verdict: o.verdict,
      quality_score: o.quality_score,
      reason_codes: o.reason_codes,
      fix_mode: o.fix_mode,
      missing_requirements: o.missing_requirements,
      directive: o.directive,
      judged_by: o.judged_by,
      blueprint: o.blueprint,
    },
  };
}
