import { describe, expect, it } from 'vitest';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { comparableDiff, diffDecisions, summarizeDiffs } from '../../../../src/engine/rollout/diff.js';
import { readOnlyState, readOnlyTrustDebt, ShadowEvaluator } from '../../../../src/engine/rollout/shadow.js';
import { RolloutStageHook } from '../../../../src/engine/rollout/stage-hook.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore, DEFAULT_TRUST_DEBT_CONFIG } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';
import { ROLL_V1, ROLL_V2, rollRegistry, rollSet, toolCall } from './fixtures.js';

const registry = rollRegistry(['a']);
const engineOn = (set: ReturnType<typeof rollSet>, debt = new MemoryTrustDebtStore()) =>
  new StewardEngine({ blueprints: () => set, registry, config: defaultEngineConfig(), state: new MemoryStateStore(), trustDebt: debt, engineVersion: 't' });
const t = (n: number, id = `t${n}`) => toolCall('a', id, n) as Trace;

describe('shadow diff', () => {
  it('names what changed: intervention, stage, tripwires, rules; nothing for equal decisions', async () => {
    const active = engineOn(rollSet(ROLL_V1));
    const cand = engineOn(rollSet(ROLL_V2));
    const ids = (n: number) => ({ shadowId: 's', traceId: `t${n}`, agentId: 'a', tenant: 'ten', eventTimeMs: 1, evaluatedAtMs: 2 });
    const d = async (n: number) => diffDecisions(await active.decide(t(n), 1), await cand.decide(t(n), 1), ids(n));
    expect(await d(1)).toMatchObject({ changed: false, change_kinds: [], active_intervention: 'ok', shadow_intervention: 'ok', active_blueprint: 't/roll@1.0.0', shadow_blueprint: 't/roll@2.0.0' });
    expect(await d(7)).toMatchObject({ changed: true, change_kinds: ['intervention', 'stage', 'rules'], shadow_intervention: 'block', shadow_rules_failed: ['small'], active_rules_failed: [] });
    expect(await d(20)).toMatchObject({ changed: true, change_kinds: ['intervention', 'stage', 'tripwires'], shadow_intervention: 'halt', shadow_tripwires_fired: ['big'] });
    expect(diffDecisions({ blueprint: 'x@1', blueprintVersion: '1.0.0', intervention: 'ok', stage: 'none', tripwires: [], rules: [] }, { blueprint: 'x@1', blueprintVersion: '1.0.0', intervention: 'ok', stage: 'none', tripwires: [], rules: [] }, { ...ids(0), ctq: { active: 0.5, shadow: 0.7 } })).toMatchObject({ change_kinds: ['ctq'], ctq_delta: expect.closeTo(0.2, 9) });
    const all = await Promise.all([1, 7, 20, 60, 8].map(d));
    const s = summarizeDiffs(all, 1);
    expect(s).toMatchObject({ traces: 5, changed: 4, byTransition: { 'ok → block': 2, 'ok → halt': 1, 'block → halt': 1 } });
    expect(s.examples.map((e) => e.trace_id)).toEqual(['t7', 't20', 't60']);
    expect(comparableDiff(all[1]!)).not.toHaveProperty('evaluated_at_ms');
  });

  it('the shadow engine cannot move trust debt nor write rate windows; a failing candidate is dropped, not thrown', async () => {
    const debt = new MemoryTrustDebtStore();
    const ro = readOnlyTrustDebt(debt);
    expect(await ro.current('ten', 'a', 0, DEFAULT_TRUST_DEBT_CONFIG)).toMatchObject({ debt: expect.any(Number) });
    expect(() => ro.apply({ eventId: 'e', tenant: 'ten', agentId: 'a', atMs: 0, kind: 'intervention', intervention: 'halt' }, DEFAULT_TRUST_DEBT_CONFIG)).toThrow(/must not move trust debt/);
    const writes: string[] = [];
    const view = readOnlyState({ get: async () => 'v', peekHit: async (ns, key) => (writes.push(`peek ${ns}:${key}`), 3) });
    expect(view.set).toBeUndefined();
    expect(await view.hit('ns', 'k', 1000, 0, 'h')).toBe(3);
    const errors: unknown[] = [];
    const ev = new ShadowEvaluator({ shadowId: 's', engine: { decide: async () => { throw new Error('boom'); } }, nowMs: () => 0, onError: (e) => errors.push(e) });
    const active = await engineOn(rollSet(ROLL_V1)).decide(t(1), 1);
    expect(await ev.evaluate(t(1), active, 1)).toBeUndefined();
    expect(ev.errors).toBe(1);
    expect(errors).toHaveLength(1);
  });
});

describe('RolloutStageHook', () => {
  it('counts armed decisions for their rollout, drains queued records once, emits the diff, drops an oversized one', async () => {
    const recorded: unknown[] = [];
    const active = engineOn(rollSet(ROLL_V1));
    const shadow = new ShadowEvaluator({ shadowId: 's', engine: engineOn(rollSet(ROLL_V2)), nowMs: () => 5 });
    const hook = new RolloutStageHook({ recorder: { record: (...a) => recorded.push(a) }, shadow, shadowTopic: 'p.shadow-diffs' });
    const rec = { ...(await active.decide(t(20), 1)), rolloutArm: 'canary' as const };
    hook.enqueue([{ topic: 'p.rollouts', message: { key: 't/roll', value: '{}' } }]);
    const first = await hook.afterDecision(t(20), rec, 1000);
    expect(first.map((o) => o.topic)).toEqual(['p.rollouts', 'p.shadow-diffs']);
    expect(JSON.parse(first[1]!.message.value)).toMatchObject({ trace_id: 't20', changed: true, evaluated_at_ms: 5 });
    expect(recorded).toEqual([['t/roll', 'canary', 1000, { n: 1, intervention: 0, halt: 0, block: 0, error: 0 }]]);
    expect((await hook.afterDecision(t(20), { ...rec, rolloutArm: undefined }, 1000)).map((o) => o.topic)).toEqual(['p.shadow-diffs']);
    expect(recorded).toHaveLength(1);
    const dropped: string[] = [];
    const small = new RolloutStageHook({ shadow, shadowTopic: 'x', maxMessageBytes: 100, onDropped: (w) => dropped.push(w) });
    expect(await small.afterDecision(t(20), rec, 1)).toEqual([]);
    expect(dropped).toEqual(['shadow diff over limits.max_message_bytes']);
  });
});
