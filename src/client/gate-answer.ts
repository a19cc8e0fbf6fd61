/** The shape of a finalize() answer when it is not the gate's own: a rejection or the governance fallback. */
import type { DecisionMessage, GateReplyMessage, RejectedInfo } from '../contracts/messages.js';
import type { Trace } from '../engine/types.js';

/**
 * What finalize() returns: the gate's answer (verdict, action, directive), a fail-closed `block` with `rejected`
 * when the trace was refused (a final answer without job_id or draft), or the governance fallback (`fallback: true`).
 */
export type ClientGateAnswer = GateReplyMessage & { rejected?: RejectedInfo; fallback?: boolean; fallback_reason?: string };

/** A decision-shaped answer to a finalize() call (a rejection or the fallback) as the gate's answer shape. */
export function gateAnswerOf(d: DecisionMessage, trace: Trace): ClientGateAnswer {
  const blocked = d.intervention === 'block' || d.intervention === 'halt';
  return {
    trace_id: trace.trace_id,
    agent_id: trace.agent_id,
    job_id: typeof trace.job_id === 'string' ? trace.job_id : '',
    intervention: d.intervention,
    approved: d.approved,
    verdict: null,
    quality_score: null,
    reason_codes: [],
    fix_mode: null,
    attempt_index: -1,
    // The governance fallback decides as for any other trace: allowed answers ship with their limitations noted.
    action: blocked ? 'block' : d.approved ? 'finalize_with_limitations' : 'block',
    judged_by: 'rules',
    missing_requirements: [],
    directive: d.reasons.join('; ') || null,
    degraded: true,
    event_time_ms: d.event_time_ms,
    decided_at_ms: d.decided_at_ms,
    ...(d.rejected ? { rejected: d.rejected } : {}),
    ...(d.fallback ? { fallback: true, fallback_reason: d.fallback_reason } : {}),
  };
}

export const isDecision = (r: DecisionMessage | GateReplyMessage): r is DecisionMessage => !('action' in r && 'judged_by' in r);
