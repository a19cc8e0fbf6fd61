// spec-decisions D20: an outcome forced by an unavailable dependency keeps its decision, is marked degraded,
// and moves no trust debt; a check that decides on its own is never degraded by an outage beside it.
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, createAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { MemoryStateStore } from '../../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { isDegraded } from '../../../src/engine/tripwires/index.js';
import { DEFAULT_TRUST_DEBT_CONFIG, MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import type { LlmClient, StateStore, Trace } from '../../../src/engine/types.js';
import { Ed25519Signer } from '../../../src/engine/verdict/index.js';
import { StewardError } from '../../../src/errors.js';

const BP = `
id: t/deg@1.0
version: "1.0.0"
description: degraded outcomes
scope: { agent_tier: [ACL-2] }
tripwires:
  - id: rate
    severity: severe
    eval_tier: 1
    when: { hook: tool_call }
    condition: "NOT exceeds_rate(agent_id, 100, '1m')"
    on_fail: { decision: block, reason: too many calls }
checks:
  - id: cap
    when: { hook: tool_call }
    rule: { condition: "args.n <= 10", on_fail: { decision: block, reason: over cap } }
  - id: judged
    when: { hook: output }
    metric: { name: judged, weight: 1, check: { type: llm } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
governance: { fallback_on_timeout: deny }
`;

/** A StateStore whose every call fails as Redis does when it is down. */
const downState: StateStore = new Proxy({} as StateStore, {
  get: () => async () => {
    throw new StewardError('STEWARD_STATE_UNAVAILABLE', 'redis is down', { retryable: true });
  },
});
const downLlm: LlmClient = {
  async complete() {
    throw new StewardError('STEWARD_LLM_HTTP', 'LLM HTTP 503', { retryable: true });
  },
};

function engine(state: StateStore, llm?: LlmClient) {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 'deg.yaml', text: BP }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const trustDebt = new MemoryTrustDebtStore();
  const e = new StewardEngine({
    blueprints: () => res.set!,
    registry: createAgentRegistry([{ id: 'a', tenant: 'ten', tier: 'ACL-2', tools: [], domains: [], registered: true }]),
    config,
    state,
    trustDebt,
    llm,
    llmJudge: { maxInFlight: 2, timeoutMs: 200, retries: 0 } as never,
    signer: Ed25519Signer.ephemeral(),
    engineVersion: 't',
  });
  return { e, trustDebt };
}

const T = Date.UTC(2026, 5, 1);
const call = (id: string, n: number): Trace => ({ trace_id: id, agent_id: 'a', timestamp: new Date(T).toISOString(), hook: 'tool_call', tool: 'x', args: { n } });

describe('degraded outcomes (spec-decisions D20)', () => {
  it('a tripwire that failed closed because Redis is down: block kept, degraded, no trust debt', async () => {
    const { e, trustDebt } = engine(downState);
    const r = await e.evaluate(call('t1', 1), T);
    expect(r.decision).toMatchObject({ intervention: 'block', degraded: true });
    expect(r.decision.tripwires[0]!.error?.code).toBe('STEWARD_STATE_UNAVAILABLE');
    expect(r.score).toMatchObject({ intervention: 'block', degraded: true });
    expect(r.trustDebt).toEqual({ before: 0, after: 0, level: 'normal' });
    expect((await trustDebt.current('ten', 'a', T + 1, DEFAULT_TRUST_DEBT_CONFIG)).debt).toBe(0);
  });

  it('a rule that blocks on its own is not degraded by the outage beside it, and moves debt', async () => {
    const { e } = engine(downState);
    const r = await e.evaluate(call('t2', 50), T);
    expect(r.decision.intervention).toBe('block');
    expect(r.decision.degraded).toBeUndefined();
    expect(r.score.degraded).toBeUndefined();
    expect(r.trustDebt.after).toBeGreaterThan(0);
  });

  it("an LLM outage: the unavailable metric's fallback (deny → block) is degraded and moves no debt", async () => {
    const { e } = engine(new MemoryStateStore(), downLlm);
    const r = await e.evaluate({ trace_id: 't3', agent_id: 'a', timestamp: new Date(T).toISOString(), hook: 'output', content: 'hello' }, T);
    expect(r.score.metrics[0]!.status).toBe('unavailable');
    expect(r.score).toMatchObject({ intervention: 'block', stage: 'ctq', degraded: true });
    expect(r.trustDebt.after).toBe(0);
  });

  it('isDegraded compares what the checks decided on their own with the stage intervention', () => {
    const down = { code: 'STEWARD_STATE_TIMEOUT', message: 'slow' };
    expect(isDegraded({ intervention: 'block', tripwires: [{ id: 'r', fired: true, decision: 'block', error: down }], rules: [] })).toBe(true);
    expect(isDegraded({ intervention: 'block', tripwires: [{ id: 'r', fired: true, decision: 'block', error: down }], rules: [{ id: 'c', passed: false, decision: 'block' }] })).toBe(false);
    expect(isDegraded({ intervention: 'block', tripwires: [{ id: 'r', fired: true, decision: 'block', error: down }], rules: [{ id: 'c', passed: false, decision: 'flag' }] })).toBe(true);
    // an evaluation error of the trace's own data (not a dependency) is the agent's, not degraded
    expect(isDegraded({ intervention: 'block', tripwires: [{ id: 'r', fired: true, decision: 'block', error: { code: 'STEWARD_DSL_EVAL', message: 'x' } }], rules: [] })).toBe(false);
    expect(isDegraded({ intervention: 'ok', tripwires: [], rules: [] })).toBe(false);
  });
});
