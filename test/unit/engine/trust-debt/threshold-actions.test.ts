// §10.6 threshold actions as the engine takes them: elevated_monitoring → full scoring (fresh scorer
// calls, no cached LLM judgement), restricted_mode → stricter thresholds from the blueprint's own levels.
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, createAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { StewardEngine, type DecisionRecord } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore, levelActions, maxLevel } from '../../../../src/engine/trust-debt/index.js';
import type { LlmClient, Trace } from '../../../../src/engine/types.js';

const BP = `
id: t/watch@1.0
version: "1.0.0"
description: threshold actions
checks:
  - id: judged
    when: { hook: output }
    metric: { name: candour, weight: 1, check: { type: llm, args: { prompt_template: "Check the answer for candour" } } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
trust_debt:
  thresholds: { elevated_monitoring: 0.1, restricted_mode: 0.2, re_tiering_review: 0.9 }
`;

const llmMetrics = (s: { metrics: { scorer: string }[] }) => s.metrics.filter((m) => m.scorer === 'llm-judge').length;
const T0 = Date.parse('2026-03-01T00:00:00Z');

function setup(llmScore = 0.9) {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 'watch.yaml', text: BP }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const set = res.set;
  let calls = 0;
  const llm: LlmClient = {
    async complete() {
      calls++;
      return { text: JSON.stringify({ score: llmScore, confidence: 0.9, explanation: 'judged' }) } as Awaited<ReturnType<LlmClient['complete']>>;
    },
  };
  const trustDebt = new MemoryTrustDebtStore();
  const engine = new StewardEngine({
    blueprints: () => set,
    registry: createAgentRegistry([]),
    config,
    trustDebt,
    llm,
    engineVersion: 'test',
  });
  const bp = set.blueprints.find((b) => b.id === 't/watch@1.0')!;
  return { engine, trustDebt, bp, calls: () => calls };
}

// Same content every time: the llm-judge prompt (and so its cache key) is identical for all of them.
const out = (id: string, agent: string): Trace => ({ trace_id: id, agent_id: agent, timestamp: '2026-03-01T00:00:00Z', hook: 'output', content: 'the same answer' });

describe('levelActions (§10.6)', () => {
  it('maps each level onto its actions', () => {
    expect(levelActions('normal')).toEqual({ fullScoring: false, traceLogLevel: 'debug', restricted: false, reTieringReview: false });
    expect(levelActions('elevated_monitoring')).toEqual({ fullScoring: true, traceLogLevel: 'info', restricted: false, reTieringReview: false });
    expect(levelActions('restricted_mode')).toEqual({ fullScoring: true, traceLogLevel: 'info', restricted: true, reTieringReview: false });
    expect(levelActions('re_tiering_review')).toEqual({ fullScoring: true, traceLogLevel: 'info', restricted: true, reTieringReview: true });
    expect(maxLevel('normal', 'restricted_mode')).toBe('restricted_mode');
    expect(maxLevel('re_tiering_review', 'elevated_monitoring')).toBe('re_tiering_review');
  });
});

describe('StewardEngine threshold actions', () => {
  it('a normal agent may be answered from the llm-judge cache; an elevated agent gets a fresh judgement per trace', async () => {
    const { engine, trustDebt, bp, calls } = setup();
    const n1 = await engine.evaluate(out('n-1', 'calm'), T0);
    const per = calls(); // one LLM call per matched llm metric (the inherited baseline's and this one)
    expect(per).toBe(llmMetrics(n1.score));
    expect(per).toBeGreaterThan(1);
    const n2 = await engine.evaluate(out('n-2', 'calm'), T0);
    expect(calls()).toBe(per); // the second identical trace was answered from the cache
    expect(n1.score.fullScoring).toBe(false);
    expect(n2.score.metrics.find((m) => m.name === 'candour')).toMatchObject({ status: 'ok', score: 0.9 });
    expect(n2.decision.fullScoring).toBe(false);

    // 0.15 of debt is elevated_monitoring under this blueprint (0.10), normal under the §10 default (0.30).
    await trustDebt.apply({ eventId: 'x', tenant: 'default', agentId: 'watched', atMs: T0, kind: 'intervention', intervention: 'block' }, bp.trustDebt);
    const e1 = await engine.evaluate(out('e-1', 'watched'), T0);
    expect(e1.decision.trustDebt.level).toBe('elevated_monitoring');
    const before = calls();
    const e2 = await engine.score(out('e-2', 'watched'), await engine.decide(out('e-2', 'watched'), T0), T0);
    const e3 = await engine.score(out('e-3', 'watched'), await engine.decide(out('e-3', 'watched'), T0), T0);
    expect(calls() - before).toBe(2 * per); // every metric of every trace judged afresh, nothing from the cache
    for (const s of [e1.score, e2, e3]) {
      expect(s.fullScoring).toBe(true);
      expect(s.metrics.filter((m) => m.scorer === 'llm-judge').map((m) => m.status)).toEqual(Array(per).fill('ok'));
    }
    expect(e2.trustDebt).toEqual({ debt: expect.closeTo(0.15, 12), level: 'elevated_monitoring' });
  });

  it('elevated_monitoring alone (below restricted_mode) already means full scoring, without tighter thresholds', async () => {
    const { engine, trustDebt, bp, calls } = setup();
    await trustDebt.apply({ eventId: 'f', tenant: 'default', agentId: 'w', atMs: T0, kind: 'intervention', intervention: 'flag' }, bp.trustDebt);
    await trustDebt.apply({ eventId: 'f2', tenant: 'default', agentId: 'w', atMs: T0, kind: 'intervention', intervention: 'flag' }, bp.trustDebt);
    const d1 = await engine.decide(out('w-1', 'w'), T0);
    expect(d1.trustDebt).toEqual({ debt: expect.closeTo(0.1, 12), level: 'elevated_monitoring' });
    expect(d1).toMatchObject({ fullScoring: true, restricted: false });
    const s1 = await engine.score(out('w-1', 'w'), d1, T0);
    const per = llmMetrics(s1);
    await engine.score(out('w-2', 'w'), await engine.decide(out('w-2', 'w'), T0), T0);
    expect(calls()).toBe(2 * per);
  });

  it('a decision that arrives without the flag (Kafka decision message) is scored by the agent\'s current level', async () => {
    const { engine, trustDebt, bp, calls } = setup();
    await trustDebt.apply({ eventId: 'b', tenant: 'default', agentId: 'k', atMs: T0, kind: 'intervention', intervention: 'block' }, bp.trustDebt);
    const full = await engine.decide(out('k-1', 'k'), T0);
    const bare = { ...full } as Partial<DecisionRecord>;
    delete bare.fullScoring;
    delete bare.trustDebt;
    delete bare.restricted;
    const a = await engine.score(out('k-1', 'k'), bare as DecisionRecord, T0);
    const b = await engine.score(out('k-2', 'k'), bare as DecisionRecord, T0);
    expect(calls()).toBe(2 * llmMetrics(a));
    expect(a.fullScoring && b.fullScoring).toBe(true);
    expect(a.trustDebt.level).toBe('elevated_monitoring');
  });

  it('restricted_mode tightens the risk boundaries at the blueprint\'s own restricted threshold (spec-decisions D6)', async () => {
    // CTQ 0.8 → risk 0.2: ok under ok=0.25 (ACL-2); restricted mode (−0.10 → ok 0.15, nudge 0.30) makes it a nudge.
    const { engine, trustDebt, bp } = setup(0.8);
    const calm = await engine.evaluate(out('r-1', 'calm'), T0);
    expect(calm.score).toMatchObject({ intervention: 'ok', risk: expect.closeTo(0.2, 9) });
    // two blocks: 0.30 is restricted_mode under this blueprint (0.20); the §10 default would say elevated only
    await trustDebt.apply({ eventId: 'r1', tenant: 'default', agentId: 'r', atMs: T0, kind: 'intervention', intervention: 'block' }, bp.trustDebt);
    await trustDebt.apply({ eventId: 'r2', tenant: 'default', agentId: 'r', atMs: T0, kind: 'intervention', intervention: 'block' }, bp.trustDebt);
    const restricted = await engine.evaluate(out('r-2', 'r'), T0);
    expect(restricted.decision).toMatchObject({ restricted: true, trustDebt: { level: 'restricted_mode' } });
    expect(restricted.score).toMatchObject({ intervention: 'nudge', risk: expect.closeTo(0.2, 9) });
  });
});
