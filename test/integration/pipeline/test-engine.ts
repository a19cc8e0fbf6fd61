// Test doubles of the ENGINE side only (never of Kafka, the registry or Redis). No vitest imports, so
// child processes of the crash tests can use them too.
import type { DecideScoreEngine } from '../../../src/consumers/stage-types.js';
import type { TrustDebtChange, TrustDebtEvent, TrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import type { Intervention, Trace } from '../../../src/engine/types.js';
import type { DecisionRecord, ScoreDecisionInput, ScoreRecord } from '../../../src/engine/steward-engine.js';

/**
 * A deterministic engine for stream-mechanics tests: halt on tool `rm_rf`, block when args.amount > 1000,
 * flag when content mentions "password", ok otherwise; score() adds a CTQ of 0.9 (0.3 for flagged traces → escalate).
 */
export class TestEngine implements DecideScoreEngine {
  decided = 0;
  /** Artificial per-trace work (ms), so a kill lands mid-stream. */
  delayMs = 0;
  scored = 0;
  failOn?: (t: Trace) => boolean;
  async decide(trace: Trace, now: number, eventId?: string): Promise<DecisionRecord> {
    this.decided++;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failOn?.(trace)) throw new Error(`engine failure on ${trace.trace_id}`);
    const amount = Number((trace.args as { amount?: number } | undefined)?.amount ?? 0);
    const halted = trace.tool === 'rm_rf';
    const intervention: Intervention = halted ? 'halt' : amount > 1000 ? 'block' : typeof trace.content === 'string' && trace.content.includes('password') ? 'flag' : 'ok';
    return {
      traceId: trace.trace_id,
      agentId: trace.agent_id,
      tenant: 'acme',
      tier: 'ACL-2',
      blueprintVersion: '1.0.0',
      trustDebt: { debt: 0, level: 'normal' },
      restricted: false,
      fullScoring: false,
      nowMs: now,
      blueprint: 'test/bp@1.0',
      intervention,
      stage: halted ? 'tripwire' : intervention === 'ok' ? 'none' : 'rule',
      halted,
      reasons: intervention === 'ok' ? [] : [`test ${intervention}`],
      severity: halted ? 'critical' : undefined,
      tripwires: [{ id: 'no_rm', fired: halted }],
      rules: [{ id: 'amount_cap', passed: amount <= 1000 }],
      latencyMs: 0.1,
      eventId, // as StewardEngine.decide: the stage's idempotency id travels with the record
    };
  }
  async score(trace: Trace, decision: ScoreDecisionInput, _now: number): Promise<ScoreRecord> {
    this.scored++;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const flagged = decision.intervention === 'flag';
    const ctq = flagged ? 0.3 : 0.9;
    const intervention: Intervention = flagged ? 'escalate' : decision.intervention;
    return {
      traceId: trace.trace_id,
      agentId: trace.agent_id,
      tenant: 'acme',
      blueprint: decision.blueprint,
      approved: intervention === 'ok',
      confidence: 0.8,
      latencyMs: 0,
      trustDebt: { debt: 0, level: 'normal' },
      fullScoring: false,
      severity: flagged ? undefined : decision.severity,
      intervention,
      stage: flagged || decision.stage === 'none' ? 'ctq' : decision.stage,
      ctq,
      risk: 1 - ctq,
      metrics: [{ name: 'clarity', score: ctq, weight: 1, confidence: 0.8, scorer: 'rule-based', status: 'ok' }],
      verdict: { version: 'pvs-1', approved: intervention === 'ok', reasoning: 'test', policy_violations: [], confidence_score: 0.8, metadata: { engine: 'steward', engine_version: 'test', latency_ms: 0 } },
    };
  }
}

const WEIGHT: Record<string, number> = { ok: 0, nudge: 0.02, flag: 0.05, escalate: 0, block: 0.15, halt: 0.5 };

/** In-process trust-debt store with the contract's idempotency (by event id); used where Redis is not the subject. */
export class MapTrustDebtStore implements Pick<TrustDebtStore, 'apply'> {
  readonly debt = new Map<string, number>();
  private readonly seen = new Map<string, TrustDebtChange>();
  async apply(ev: TrustDebtEvent): Promise<TrustDebtChange> {
    const prev = this.seen.get(ev.eventId);
    if (prev) return { ...prev, duplicate: true };
    const k = `${ev.tenant}:${ev.agentId}`;
    const before = this.debt.get(k) ?? 0;
    const after = Math.min(1, before + (ev.kind === 'intervention' ? (WEIGHT[ev.intervention ?? 'ok'] ?? 0) : -(ev.credit ?? 0.1)));
    this.debt.set(k, after);
    const c: TrustDebtChange = { eventId: ev.eventId, tenant: ev.tenant, agentId: ev.agentId, atMs: ev.atMs, cause: ev.intervention ?? ev.kind, before, after, level: 'normal', previousLevel: 'normal', crossings: [], duplicate: false };
    this.seen.set(ev.eventId, c);
    return c;
  }
}

export function trace(i: number, agent: string, extra: Partial<Trace> = {}): Trace {
  return { trace_id: `t-${agent}-${i}`, agent_id: agent, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)).toISOString(), hook: 'tool_call', tool: 'market_data_api', args: { amount: 10 }, ...extra };
}
