/**
 * The slice of StewardEngine the stream stages use, and the mapping of its records onto the Kafka JSON
 * messages. Kept in one place so engine-side changes touch only this file.
 */
import type { Intervention, PvsVerdict, Trace } from '../engine/types.js';
import { isApproved } from '../engine/types.js';
import type { DecisionMessage, VerdictMessage } from '../adapters/kafka/messages.js';

/** What the tripwire and scorer stages need from src/engine/steward-engine.ts. */
export interface DecideScoreEngine {
  decide(trace: Trace, nowMs: number): Promise<unknown>;
  score(trace: Trace, decision: any, nowMs: number): Promise<unknown>;
}

type Rec = Record<string, any>;

function pick<T>(...vals: unknown[]): T | undefined {
  for (const v of vals) if (v !== undefined && v !== null) return v as T;
  return undefined;
}

export function decisionMessage(record: unknown, trace: Trace, eventTimeMs: number, decidedAtMs: number, engineVersion?: string): DecisionMessage {
  const r = (record ?? {}) as Rec;
  const tw = (r.tripwireStage ?? r.result ?? r) as Rec;
  const intervention = pick<Intervention>(r.intervention, tw.intervention) ?? 'ok';
  return {
    trace_id: trace.trace_id,
    agent_id: trace.agent_id,
    tenant: pick<string>(r.tenant, r.agent?.tenant) ?? '',
    blueprint: pick<string>(r.blueprint, tw.blueprint) ?? '',
    intervention,
    approved: pick<boolean>(r.approved) ?? isApproved(intervention),
    stage: pick<DecisionMessage['stage']>(r.stage, tw.stage) ?? 'none',
    halted: pick<boolean>(r.halted, tw.halted) ?? intervention === 'halt',
    reasons: pick<string[]>(r.reasons, tw.reasons) ?? [],
    severity: pick<string>(r.severity, tw.severity),
    tripwires: ((pick<Rec[]>(r.tripwires, tw.tripwires) ?? []) as Rec[]).map((t) => ({ id: t.id, fired: t.fired, decision: t.decision, reason: t.reason, error: t.error })),
    rules: ((pick<Rec[]>(r.rules, tw.rules) ?? []) as Rec[]).map((t) => ({ id: t.id, passed: t.passed, decision: t.decision, reason: t.reason, error: t.error })),
    latency_ms: pick<number>(r.latencyMs, r.latency_ms, tw.latencyMs) ?? 0,
    event_time_ms: eventTimeMs,
    decided_at_ms: decidedAtMs,
    hook: trace.hook,
    tool: trace.tool,
    session_id: trace.session_id,
    engine_version: engineVersion,
  };
}

export function verdictMessage(record: unknown, decision: DecisionMessage, scoredAtMs: number): VerdictMessage {
  const r = (record ?? {}) as Rec;
  const intervention = pick<Intervention>(r.intervention, r.finalIntervention) ?? decision.intervention;
  const metrics = (pick<Rec[]>(r.metrics) ?? []).map((m) => ({
    name: m.name,
    score: m.score ?? null,
    weight: m.weight,
    confidence: m.confidence,
    scorer: m.scorer,
    status: m.status,
  }));
  const verdict = (pick<PvsVerdict>(r.verdict) ?? {
    version: 'pvs-1',
    approved: isApproved(intervention),
    reasoning: decision.reasons.join('; '),
    policy_violations: decision.reasons,
    confidence_score: 1,
  }) as PvsVerdict;
  return {
    trace_id: decision.trace_id,
    agent_id: decision.agent_id,
    tenant: pick<string>(r.tenant) ?? decision.tenant,
    blueprint: pick<string>(r.blueprint) ?? decision.blueprint,
    intervention,
    approved: pick<boolean>(r.approved) ?? isApproved(intervention),
    stage: pick<VerdictMessage['stage']>(r.stage) ?? decision.stage,
    ctq: pick<number>(r.ctq) ?? null,
    risk: pick<number>(r.risk) ?? null,
    severity: pick<string>(r.severity) ?? decision.severity,
    metrics,
    verdict,
    event_time_ms: decision.event_time_ms,
    scored_at_ms: scoredAtMs,
  };
}
