/** The shape of a finalize() answer when it is not the gate's own: a rejection or the fallback (fail closed, spec-decisions D40). */
import type { DecisionMessage, GateReplyMessage, RejectedInfo } from '../contracts/messages.js';
import { DEFAULT_GATE_RUNTIME_LIMITS } from '../engine/gate/types.js';
import type { Trace } from '../engine/types.js';

/**
 * What finalize() returns: the gate's answer (verdict, action, directive), a fail-closed `block` with `rejected`
 * when the trace was refused (a final answer without job_id or draft), or the fail-closed fallback (`fallback: true`).
 */
export type ClientGateAnswer = GateReplyMessage & { rejected?: RejectedInfo; fallback?: boolean; fallback_reason?: string };

/** Beyond the judge's worst case: the two Kafka hops, the job-state reads and writes, a gate stage busy with a chunk. */
export const FINALIZE_MARGIN_MS = 5_000;

/**
 * finalize()'s default wait for a gate whose judge calls time out after `judgeTimeoutMs` (spec-decisions D40):
 * the gate may call its judge twice — invalid output and transport errors are retried once (D21), each call
 * bounded by the judge timeout, a slot's queue included — plus FINALIZE_MARGIN_MS. 25 s for the default 10 s.
 */
export function finalizeTimeoutFor(judgeTimeoutMs: number = DEFAULT_GATE_RUNTIME_LIMITS.judgeTimeoutMs): number {
  return 2 * judgeTimeoutMs + FINALIZE_MARGIN_MS;
}

/** finalize()'s default timeout (the default judge timeout, 10 s: 25 s). */
export const DEFAULT_FINALIZE_TIMEOUT_MS = finalizeTimeoutFor();

/**
 * A decision-shaped answer to a finalize() call (a rejection or the fallback) as the gate's answer shape. The
 * fallback never approves (D40): no judge and no tier-1 scan saw the draft (tier 1 runs in the gate stage only),
 * so whatever the governance contract's fallback_on_timeout, the answer is `block` — `escalate` when the
 * contract escalates (held for a human), `block` otherwise — with a directive saying the draft was not checked.
 */
export function gateAnswerOf(d: DecisionMessage, trace: Trace): ClientGateAnswer {
  const fallback = d.fallback === true;
  const intervention = fallback ? (d.intervention === 'escalate' ? 'escalate' : 'block') : d.intervention;
  const blocked = fallback || intervention === 'block' || intervention === 'halt' || !d.approved;
  const directive = fallback
    ? `the finalization gate did not answer (${d.reasons.join('; ') || d.fallback_reason || 'fallback'}): the draft was not checked; do not deliver it — ask again or hold it for a human (fail closed, spec-decisions D40)`
    : d.reasons.join('; ') || null;
  return {
    trace_id: trace.trace_id,
    agent_id: trace.agent_id,
    job_id: typeof trace.job_id === 'string' ? trace.job_id : '',
    intervention,
    approved: fallback ? false : d.approved,
    verdict: null,
    quality_score: null,
    reason_codes: [],
    fix_mode: null,
    attempt_index: -1,
    action: blocked ? 'block' : 'finalize_with_limitations',
    judged_by: 'rules',
    missing_requirements: [],
    directive,
    degraded: true,
    event_time_ms: d.event_time_ms,
    decided_at_ms: d.decided_at_ms,
    ...(d.rejected ? { rejected: d.rejected } : {}),
    ...(fallback ? { fallback: true, fallback_reason: d.fallback_reason } : {}),
  };
}

export const isDecision = (r: DecisionMessage | GateReplyMessage): r is DecisionMessage => !('action' in r && 'judged_by' in r);
