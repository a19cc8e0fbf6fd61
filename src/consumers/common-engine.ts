/**
 * The slice of StewardEngine the stream stages use, and the mapping of its records onto the Kafka JSON
 * messages. Kept in one place so engine-side changes touch only this file.
 */
import type { Intervention, PvsVerdict, Trace } from '../engine/types.js';
import { isApproved } from '../engine/types.js';
import type { DecisionMessage, VerdictMessage } from '../adapters/kafka/messages.js';

/** What the tripwire and scorer stages need from src/engine/steward-engine.ts. */
export interface DecideScoreEngine {
  decide(trace: Trace, nowMs: number, eventId?: string): Promise<unknown>;
  score(trace: Trace, decision: any, nowMs: number): Promise<unknown>;
}

type Rec = Record<string, any>;

function pick<T>(...vals: unknown[]): T | undefined {
  for (const v of vals) if (v !== undefined && v !== null) return v as T;
  return undefined;
}

/** pick() for the per-trace hot path: fixed arity, no rest array. */
function first<T>(a: unknown, b?: unknown, c?: unknown): T | undefined {
  if (a !== undefined && a !== null) return a as T;
  if (b !== undefined && b !== null) return b as T;
  if (c !== undefined && c !== null) return c as T;
  return undefined;
}

function tripwireOutcomes(list: Rec[]): DecisionMessage['tripwires'] {
  const out: DecisionMessage['tripwires'] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    out[i] = { id: t.id, fired: t.fired, decision: t.decision, reason: t.reason, error: t.error };
  }
  return out;
}

function ruleOutcomes(list: Rec[]): DecisionMessage['rules'] {
  const out: DecisionMessage['rules'] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    out[i] = { id: t.id, passed: t.passed, decision: t.decision, reason: t.reason, error: t.error };
  }
  return out;
}

export function decisionMessage(record: unknown, trace: Trace, eventTimeMs: number, decidedAtMs: number, engineVersion?: string): DecisionMessage {
  const r = (record ?? {}) as Rec;
  const tw = (r.tripwireStage ?? r.result ?? r) as Rec;
  const intervention = first<Intervention>(r.intervention, tw.intervention) ?? 'ok';
  return {
    trace_id: trace.trace_id,
    agent_id: trace.agent_id,
    tenant: first<string>(r.tenant, r.agent?.tenant) ?? '',
    blueprint: first<string>(r.blueprint, tw.blueprint) ?? '',
    intervention,
    approved: first<boolean>(r.approved) ?? isApproved(intervention),
    stage: first<DecisionMessage['stage']>(r.stage, tw.stage) ?? 'none',
    halted: first<boolean>(r.halted, tw.halted) ?? intervention === 'halt',
    reasons: first<string[]>(r.reasons, tw.reasons) ?? [],
    severity: first<string>(r.severity, tw.severity),
    tripwires: tripwireOutcomes(first<Rec[]>(r.tripwires, tw.tripwires) ?? []),
    rules: ruleOutcomes(first<Rec[]>(r.rules, tw.rules) ?? []),
    latency_ms: first<number>(r.latencyMs, r.latency_ms, tw.latencyMs) ?? 0,
    event_time_ms: eventTimeMs,
    decided_at_ms: decidedAtMs,
    hook: trace.hook,
    tool: trace.tool,
    session_id: trace.session_id,
    engine_version: engineVersion,
    event_id: first<string>(r.eventId, r.event_id),
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
    // A score record says which stage decided: its severity (none when CTQ or a rule decided) is final. The
    // decision's tripwire severity must not come back when CTQ decided: trust debt would weight a CTQ block as
    // that tripwire's (5x for severe).
    severity: r.stage !== undefined ? pick<string>(r.severity) : decision.severity,
    metrics,
    verdict,
    event_time_ms: decision.event_time_ms,
    scored_at_ms: scoredAtMs,
    event_id: decision.event_id,
  };
}
