/**
 * The `steward eval` output line (contracts C3) — key order exactly as in the contract's example.
 * Tests outside the project parse these lines; change nothing here without changing docs/contracts.md (contracts C3).
 */
import type { EvalRecord } from '../engine/steward-engine.js';
import type { FinalizationOutcomeEvent, GateOutcome } from '../engine/gate/index.js';
import { isApproved, type Trace, type TrustDebtLevel } from '../engine/types.js';

export function evalLine(r: EvalRecord): Record<string, unknown> {
  const d = r.decision;
  const s = r.score;
  return {
    trace_id: s.traceId,
    agent_id: s.agentId,
    blueprint: s.blueprint,
    intervention: s.intervention,
    approved: s.approved,
    stage: s.stage,
    tripwires: d.tripwires.map((t) => ({
      id: t.id,
      fired: t.fired,
      ...(t.fired && t.decision ? { decision: t.decision } : {}),
      ...(t.fired && t.reason ? { reason: t.reason } : {}),
      ...(t.error ? { error: t.error } : {}),
    })),
    rules: d.rules.map((x) => ({
      id: x.id,
      passed: x.passed,
      ...(!x.passed && x.decision ? { decision: x.decision } : {}),
      ...(!x.passed && x.reason ? { reason: x.reason } : {}),
      ...(x.error ? { error: x.error } : {}),
    })),
    ctq: s.ctq,
    risk: s.risk,
    metrics: s.metrics.map((m) => ({ name: m.name, score: m.score, weight: m.weight, confidence: m.confidence, scorer: m.scorer, status: m.status })),
    verdict: s.verdict,
    trust_debt: { before: round6(r.trustDebt.before), after: round6(r.trustDebt.after), level: r.trustDebt.level },
  };
}

/**
 * A `final_answer` line (spec-decisions D50): the C3 keys, answered as the stream answers it — by the gate alone.
 * No tripwire, rule, CTQ or PVS-1 verdict runs on a final answer in the stream, so those are empty and `stage` is
 * `gate`; `trust_debt` is the gate's own movement. The caller appends the `gate` object (contracts C5).
 */
export function gateEvalLine(o: GateOutcome, td: { before: number; after: number; level: TrustDebtLevel }): Record<string, unknown> {
  return {
    trace_id: o.trace_id,
    agent_id: o.agent_id,
    blueprint: o.blueprint,
    intervention: o.intervention,
    approved: isApproved(o.intervention),
    stage: 'gate',
    tripwires: [],
    rules: [],
    ctq: null,
    risk: null,
    metrics: [],
    verdict: null,
    trust_debt: { before: round6(td.before), after: round6(td.after), level: td.level },
  };
}

/** A `user_feedback` line (D50): the job's ending with the feedback, or null when no ended job was found (the stream publishes nothing). */
export function feedbackEvalLine(t: Trace, ev: FinalizationOutcomeEvent | null): Record<string, unknown> {
  return {
    trace_id: t.trace_id,
    agent_id: t.agent_id,
    job_id: t.job_id,
    user_feedback: t.feedback,
    outcome: ev && { final_verdict: ev.final_verdict, action: ev.action, num_retries: ev.num_retries, intervention: ev.intervention },
  };
}

export function errorLine(line: number, code: string, message: string): Record<string, unknown> {
  return { line, error: { code, message } };
}

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;
