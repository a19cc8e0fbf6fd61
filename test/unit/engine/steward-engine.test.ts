import { describe, expect, it } from 'vitest';
import { decisionInputOf } from '../../../src/contracts/engine-records.js';
import { compileBlueprintSet, createAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { createDefaultScorerRegistry, type Scorer } from '../../../src/engine/scorers/index.js';
import { MemoryStateStore } from '../../../src/engine/state/memory-state-store.js';
import { finalOutcome, StewardEngine, type StewardEngineOptions } from '../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import type { LlmClient, LlmResponse, Trace } from '../../../src/engine/types.js';
import { StewardError } from '../../../src/errors.js';
import { Ed25519Signer, verifyVerdict } from '../../../src/engine/verdict/index.js';

const BP = `
id: t/eng@1.0
version: "1.0.0"
description: engine test
scope: { agent_tier: [ACL-2] }
tripwires:
  - id: hard
    severity: critical
    when: { hook: tool_call }
    condition: "args.n <= 100"
    on_fail: { decision: halt, reason: too big }
checks:
  - id: counted
    when: { hook: tool_call }
    metric: { name: counted, weight: 1, check: { type: counting } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;

function compiled(text: string, config = defaultEngineConfig()) {
  const res = compileBlueprintSet([{ file: 'eng.yaml', text }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  return res.set;
}

/** An engine on `bp` (default config), agent `a` of tenant `ten` at ACL-2, in-memory state and debt, an ephemeral key. */
function engineOn(bp: string, opts: Partial<StewardEngineOptions> = {}): StewardEngine {
  const config = defaultEngineConfig();
  const set = compiled(bp, config);
  return new StewardEngine({
    blueprints: () => set,
    registry: createAgentRegistry([{ id: 'a', tenant: 'ten', tier: 'ACL-2', tools: [], domains: [], registered: true }]),
    config,
    state: new MemoryStateStore(),
    trustDebt: new MemoryTrustDebtStore(),
    signer: Ed25519Signer.ephemeral(),
    engineVersion: '9.9.9',
    ...opts,
  });
}

function setup(score = 0.9) {
  let calls = 0;
  const counting: Scorer = {
    scorerType: 'counting',
    evalTier: 0,
    latencyBudgetMs: 1,
    async evaluate() {
      calls++;
      return { score, confidence: 1, explanation: 'counted', evidence: {}, latencyMs: 0 };
    },
  };
  const signer = Ed25519Signer.ephemeral();
  const engine = engineOn(BP, { signer, scorers: createDefaultScorerRegistry().register(counting) });
  return { engine, signer, calls: () => calls };
}

const tr = (n: number, i = 0): Trace => ({ trace_id: `e-${n}-${i}`, agent_id: 'a', timestamp: '2025-01-01T00:00:00Z', hook: 'tool_call', args: { n } });
const NOW = Date.parse('2025-01-01T00:00:00Z');

describe('StewardEngine', () => {
  it('never runs scorers for a trace whose tripwires halted; the verdict comes from the tripwire', async () => {
    const { engine, calls, signer } = setup();
    const d = await engine.decide(tr(500), NOW);
    expect(d.halted).toBe(true);
    const s = await engine.score(tr(500), d, NOW);
    expect(calls()).toBe(0);
    expect(s).toMatchObject({ intervention: 'halt', stage: 'tripwire', metrics: [], ctq: null, severity: 'critical' });
    expect(s.verdict).toMatchObject({ approved: false, policy_violations: ['hard: too big'], metadata: { engine: 'steward', engine_version: '9.9.9', tenant_id: 'ten' } });
    expect(verifyVerdict(s.verdict, signer.publicKeyPem()).ok).toBe(true);
  });

  it('custom scorers register through the same protocol (check type = scorer type)', async () => {
    const { engine, calls } = setup(0.2);
    const r = await engine.evaluate(tr(5), NOW);
    expect(calls()).toBe(1);
    expect(r.score).toMatchObject({ intervention: 'block', stage: 'ctq', ctq: 0.2, risk: 0.8 });
    expect(r.score.metrics[0]).toMatchObject({ name: 'counted', scorer: 'counting', status: 'ok' });
    expect(r.trustDebt).toEqual({ before: 0, after: 0.15, level: 'normal' });
  });

  it('the decision record survives a JSON round trip (it travels through Kafka to the scorer stage)', async () => {
    const { engine } = setup(0.95);
    const d = JSON.parse(JSON.stringify(await engine.decide(tr(5), NOW)));
    const s = await engine.score(tr(5), d, NOW);
    expect(s).toMatchObject({ intervention: 'ok', stage: 'ctq', ctq: 0.95 });
  });

  it('trust debt moves once per trace id (redelivery is idempotent)', async () => {
    const { engine } = setup(0.2);
    const a = await engine.evaluate(tr(5, 1), NOW);
    const b = await engine.evaluate(tr(5, 1), NOW);
    expect(a.trustDebt.after).toBe(0.15);
    expect(b.trustDebt.after).toBe(0.15);
  });
});

describe('finalOutcome', () => {
  it('most severe wins; ties go to the earlier stage; all-ok is ctq when CTQ was computed, else rule', () => {
    expect(finalOutcome({ intervention: 'escalate', stage: 'rule', halted: false }, 'block')).toEqual({ intervention: 'block', stage: 'ctq' });
    expect(finalOutcome({ intervention: 'block', stage: 'rule', halted: false }, 'block')).toEqual({ intervention: 'block', stage: 'rule' });
    expect(finalOutcome({ intervention: 'flag', stage: 'tripwire', halted: false }, 'nudge')).toEqual({ intervention: 'flag', stage: 'tripwire' });
    expect(finalOutcome({ intervention: 'ok', stage: 'none', halted: false }, 'ok')).toEqual({ intervention: 'ok', stage: 'ctq' });
    expect(finalOutcome({ intervention: 'ok', stage: 'none', halted: false }, null)).toEqual({ intervention: 'ok', stage: 'rule' });
    expect(finalOutcome({ intervention: 'halt', stage: 'tripwire', halted: true }, null)).toEqual({ intervention: 'halt', stage: 'tripwire' });
  });
});

describe('StewardEngine.score with the Kafka decision message', () => {
  it('scores the decision of a snake_case decision message (converted at the edge) and still produces a valid verdict', async () => {
    const { engine } = setup(0.2);
    const msg = { trace_id: 'm-1', agent_id: 'a', tenant: '', blueprint: 't/eng@1.0', intervention: 'ok', approved: true, stage: 'none', halted: false, reasons: [], tripwires: [{ id: 'hard', fired: false }], rules: [], latency_ms: 3, event_time_ms: NOW, decided_at_ms: NOW, hook: 'output' } as const;
    const s = await engine.score(tr(5), decisionInputOf({ ...msg, reasons: [], tripwires: [...msg.tripwires], rules: [] }), NOW);
    expect(s).toMatchObject({ intervention: 'block', stage: 'ctq', ctq: 0.2 });
    expect(s.verdict.metadata?.latency_ms).toBeGreaterThanOrEqual(3);
  });
});

describe('StewardEngine state namespaces', () => {
  it('tenant "a" + agent "b:c" and tenant "a:b" + agent "c" do not share storage.get state', async () => {
    const bp = `
id: t/ns@1.0
version: "1.0.0"
description: namespace test
scope: { agent_tier: [ACL-2] }
tripwires:
  - id: quota
    severity: critical
    eval_tier: 1
    requires_state: true
    when: { hook: tool_call }
    condition: "storage.get('x:quota', 0) < 5"
    on_fail: { decision: block, reason: over quota }
checks: []
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;
    const config = defaultEngineConfig();
    const set = compiled(bp, config);
    // Over quota: agent "b:c" of tenant "a" (namespace = percent-encoded tenant ":" agent id).
    const state = new MemoryStateStore({ 'a:b%3Ac': { 'x:quota': 9 } });
    const engine = new StewardEngine({
      blueprints: () => set,
      registry: createAgentRegistry([
        { id: 'b:c', tenant: 'a', tier: 'ACL-2', tools: [], domains: [], registered: true },
        { id: 'c', tenant: 'a:b', tier: 'ACL-2', tools: [], domains: [], registered: true },
      ]),
      config,
      state,
      trustDebt: new MemoryTrustDebtStore(),
      signer: Ed25519Signer.ephemeral(),
      scorers: createDefaultScorerRegistry(),
      engineVersion: '9.9.9',
    });
    const decide = (agent: string) => engine.decide({ trace_id: `ns-${agent}`, agent_id: agent, timestamp: '2025-01-01T00:00:00Z', hook: 'tool_call' }, NOW);
    expect((await decide('b:c')).intervention).toBe('block');
    // Tenant "a:b", agent "c": before, both namespaces were "a:b:c" (one quota, one rate window for two agents).
    expect((await decide('c')).intervention).toBe('ok');
  });
});

const LLM_BP = `
id: t/llm@1.0
version: "1.0.0"
description: llm metric under load
scope: { agent_tier: [ACL-2] }
checks:
  - id: judged
    when: { hook: tool_call }
    metric: { name: judged, weight: 1, check: { type: llm } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;

/** An engine whose one metric is an llm-judge on `llm`; `score` scores `n` traces at once. */
function llmEngine(llm: LlmClient, llmJudge: { maxInFlight: number; timeoutMs: number }, metricTimeoutMs: number) {
  const engine = engineOn(LLM_BP, { llm, llmJudge, metricTimeoutMs });
  const score = (n: number, tag: string) => {
    const traces: Trace[] = Array.from({ length: n }, (_, i) => ({ trace_id: `${tag}-${i}`, agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'x', args: { i }, content: `${tag} ${i}` }));
    return Promise.all(traces.map(async (t) => engine.score(t, await engine.decide(t, 0), 0)));
  };
  return { engine, score };
}

describe('metric time budget under load', () => {
  it('time spent queueing for an LLM slot does not count: a burst against a healthy provider gets real scores', async () => {
    let inFlight = 0;
    let most = 0;
    // a healthy provider: 40 ms per answer (an in-process stand-in for the wire; the HTTP adapters have their own tests)
    const llm: LlmClient = {
      async complete() {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 40));
        inFlight--;
        return { text: '{"score": 0.9, "confidence": 0.8, "explanation": "fine"}', model: 'm' } as LlmResponse;
      },
    };
    // 20 traces x 40 ms over 2 slots queue for up to ~400 ms: well past the budget if queueing counted
    const scored = await llmEngine(llm, { maxInFlight: 2, timeoutMs: 1000 }, 150).score(20, 'q');
    expect(most).toBe(2);
    expect(scored.map((s) => s.metrics[0]!.status)).toEqual(scored.map(() => 'ok'));
  });
});

describe('a provider that is down', () => {
  it('opens the breaker after 5 failures in a row: queued metrics are unavailable at once instead of each waiting out timeouts and retries', async () => {
    let calls = 0;
    // never answers: the request times out (as the HTTP adapters do, retryably)
    const llm: LlmClient = {
      complete: (req) =>
        new Promise((_, reject) => {
          calls++;
          setTimeout(() => reject(new StewardError('STEWARD_LLM_TIMEOUT', 'timeout', { retryable: true })), req.timeoutMs ?? 20);
        }),
    };
    const scored = await llmEngine(llm, { maxInFlight: 2, timeoutMs: 20 }, 5_000).score(40, 'o');
    expect(scored.every((s) => s.metrics[0]!.status === 'unavailable')).toBe(true);
    expect(scored.every((s) => s.intervention === 'flag')).toBe(true); // the ACL-2 contract fallback
    // 40 traces x 3 attempts would be 120 calls; the breaker stops after the 5 that opened it (+ the other slot)
    expect(calls).toBeLessThanOrEqual(6);
    expect(scored.some((s) => /not calling it/.test(s.metrics[0]!.explanation ?? ''))).toBe(true);
  });

  it('a metric queued behind a call that never returns still ends (three budgets of wall time at most)', async () => {
    const hung: LlmClient = { complete: () => new Promise(() => undefined) }; // ignores timeouts and aborts
    const scored = await llmEngine(hung, { maxInFlight: 1, timeoutMs: 20 }, 50).score(2, 'h');
    expect(scored.map((s) => s.metrics[0]!.status)).toEqual(['unavailable', 'unavailable']);
  });
});
