/**
 * The `steward eval` output line (contracts C3) — key order exactly as in the contract's example.
 * Tests outside the project parse these lines; change nothing here without changing docs/contracts.md (contracts C3).
 */
import type { EvalRecord } from '../engine/steward-engine.js';

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

export function errorLine(line: number, code: string, message: string): Record<string, unknown> {
  return { line, error: { code, message } };
}

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;
