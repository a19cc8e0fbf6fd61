/**
 * The edge between the engine's records (camelCase, src/engine/steward-engine.ts) and the acgp.* wire
 * messages (snake_case, ./messages.ts). The engine never sees the wire format; the stages convert here.
 */
import type { ScoreDecisionInput, ScoreRecord } from '../engine/steward-engine.js';
import type { RuleOutcome, Trace, TripwireOutcome } from '../engine/types.js';
import type { GateOutcome } from '../engine/gate/types.js';
import { wellFormedReason, type CheckOutcome, type DecisionMessage, type RuleCheckOutcome, type VerdictMessage } from './messages.js';

function tripwireOutcomes(list: readonly TripwireOutcome[]): CheckOutcome[] {
  const out: CheckOutcome[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    out[i] = { id: t.id, fired: t.fired, decision: t.decision, reason: t.reason, error: t.error };
  }
  return out;
}

function ruleOutcomes(list: readonly RuleOutcome[]): RuleCheckOutcome[] {
  const out: RuleCheckOutcome[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    out[i] = { id: t.id, passed: t.passed, decision: t.decision, reason: t.reason, error: t.error };
  }
  return out;
}

/** acgp.decisions message of a decide() record. */
export function decisionMessage(r: ScoreDecisionInput, trace: Trace, eventTimeMs: number, decidedAtMs: number, engineVersion?: string): DecisionMessage {
  return {
    trace_id: trace.trace_id,
    agent_id: trace.agent_id,
    tenant: r.tenant ?? '',
    blueprint: r.blueprint,
    intervention: r.intervention,
    approved: r.intervention === 'ok' || r.intervention === 'nudge' || r.intervention === 'flag',
    stage: r.stage,
    halted: r.halted,
    reasons: r.reasons.map(wellFormedReason),
    severity: r.severity,
    tripwires: tripwireOutcomes(r.tripwires),
    rules: ruleOutcomes(r.rules),
    latency_ms: r.latencyMs,
    event_time_ms: eventTimeMs,
    decided_at_ms: decidedAtMs,
    hook: trace.hook,
    tool: trace.tool,
    session_id: trace.session_id,
    engine_version: engineVersion,
    event_id: r.eventId,
    ...(r.degraded ? { degraded: true } : {}),
    ...(r.blueprintVersion ? { blueprint_version: r.blueprintVersion } : {}),
    ...(r.rolloutArm ? { rollout_arm: r.rolloutArm } : {}),
    ...(r.approval ? { approval_id: r.approval.approval_id, approval_deadline_ms: r.approval.deadline_ms } : {}),
  };
}

/**
 * The decision record of an acgp.decisions message (the earlier acgp.scoring form carried the message, not
 * the record). What decide() derived from state is absent: score() reads it again.
 */
export function decisionInputOf(m: DecisionMessage): ScoreDecisionInput {
  return {
    traceId: m.trace_id,
    agentId: m.agent_id,
    tenant: m.tenant || undefined,
    blueprint: m.blueprint,
    intervention: m.intervention,
    stage: m.stage,
    halted: m.halted === true,
    tripwires: Array.isArray(m.tripwires) ? m.tripwires : [],
    rules: Array.isArray(m.rules) ? m.rules : [],
    reasons: Array.isArray(m.reasons) ? m.reasons : [],
    severity: m.severity as TripwireOutcome['severity'],
    latencyMs: typeof m.latency_ms === 'number' ? m.latency_ms : 0,
    eventId: m.event_id,
    ...(m.degraded === true ? { degraded: true } : {}),
  };
}

/** acgp.verdicts message of a score() record; ids and times come from the trace's decision message. */
export function verdictMessage(r: ScoreRecord, decision: DecisionMessage, scoredAtMs: number): VerdictMessage {
  const metrics: VerdictMessage['metrics'] = new Array(r.metrics.length);
  for (let i = 0; i < r.metrics.length; i++) {
    const m = r.metrics[i]!;
    metrics[i] = { name: m.name, score: m.score ?? null, weight: m.weight, confidence: m.confidence, scorer: m.scorer, status: m.status };
  }
  return {
    trace_id: decision.trace_id,
    agent_id: decision.agent_id,
    tenant: r.tenant,
    blueprint: r.blueprint,
    intervention: r.intervention,
    approved: r.approved,
    stage: r.stage,
    ctq: r.ctq,
    risk: r.risk,
    // The score record's severity (none when CTQ or a rule decided) is final: the decision's tripwire
    // severity must not come back when CTQ decided (trust debt would weight a CTQ block as that tripwire's).
    severity: r.severity,
    metrics,
    verdict: r.verdict,
    event_time_ms: decision.event_time_ms,
    scored_at_ms: scoredAtMs,
    event_id: decision.event_id,
    ...(r.degraded ? { degraded: true } : {}),
  };
}


/** The finalization gate's answer fields in contract order (contracts C5): the eval line's `gate` and the reply share them. */
export function gateAnswerFields(o: GateOutcome): Pick<GateOutcome, 'verdict' | 'quality_score' | 'reason_codes' | 'fix_mode' | 'attempt_index' | 'action' | 'judged_by' | 'missing_requirements' | 'directive' | 'intervention' | 'degraded'> {
  return {
    verdict: o.verdict,
    quality_score: o.quality_score,
    reason_codes: o.reason_codes,
    fix_mode: o.fix_mode,
    attempt_index: o.attempt_index,
    action: o.action,
    judged_by: o.judged_by,
    missing_requirements: o.missing_requirements,
    directive: o.directive,
    intervention: o.intervention,
    degraded: o.degraded,
  };
}
