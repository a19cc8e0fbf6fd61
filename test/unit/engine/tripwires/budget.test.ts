/**
 * Tier latency budgets (spec-decisions D3) and fail-closed fallbacks (spec-decisions D5) of the tripwire stage.
 * Time is a fake clock and the state store a deterministic stand-in whose calls answer only when the
 * test says so: nothing here depends on wall-clock timing (real Redis lives in integration tests).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TIERS, defaultEngineConfig } from '../../../../src/engine/config.js';
import { compileCondition, compileWhen, dslOptionsFromConfig } from '../../../../src/engine/dsl/index.js';
import { runTripwireStage, stageBudgetMs, type StageTimer } from '../../../../src/engine/tripwires/index.js';
import type { AclTier, CompiledBlueprint, CompiledRule, CompiledTripwire, EvalContext, FallbackOnTimeout, Intervention, StateStore, TripwireStageResult } from '../../../../src/engine/types.js';

class FakeClock implements StageTimer {
  t = 0;
  private timers: { at: number; fn: () => void }[] = [];
  now(): number {
    return this.t;
  }
  after(ms: number, fn: () => void): () => void {
    const e = { at: this.t + ms, fn };
    this.timers.push(e);
    return () => (this.timers = this.timers.filter((x) => x !== e));
  }
  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }
  pending(): number {
    return this.timers.length;
  }
}

/** A StateStore whose calls stay pending until answered; `lag` (ms on the fake clock) is added per call when answered. */
class SlowStore implements StateStore {
  calls: { key: string; answer: (n: number) => void }[] = [];
  get(): Promise<unknown> {
    return new Promise(() => undefined);
  }
  hit(_ns: string, key: string): Promise<number> {
    return new Promise((resolve) => this.calls.push({ key, answer: resolve }));
  }
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));
const opts = dslOptionsFromConfig(defaultEngineConfig());
const cond = (c: string) => compileCondition(c, opts).condition!;

function tw(id: string, condition: string, decision: Intervention = 'nudge', latencyBudgetMs = 300): CompiledTripwire {
  const c = cond(condition);
  return { id, when: compileWhen({}), condition: c, evalTier: c.async ? 1 : 0, latencyBudgetMs, requiresState: c.async, severity: 'standard', onFail: { decision, reason: `${id} failed` } };
}
const rate = (id: string, ownMs = 300): CompiledTripwire => tw(id, `NOT exceeds_rate("${id}", 100, "1h")`, 'nudge', ownMs);
const rule = (id: string, condition: string): CompiledRule => ({ id, when: compileWhen({}), condition: cond(condition), onFail: { decision: 'flag', reason: `${id} failed` } });

function bp(tripwires: CompiledTripwire[], rules: CompiledRule[] = [], fallbackOnTimeout?: FallbackOnTimeout): CompiledBlueprint {
  return { id: 'test/budget@1.0', version: '1.0.0', description: '', chain: [], scope: {}, tripwires, rules, metrics: [], ctq: { aggregation: 'weighted_average' }, scoring: { ok: 0.2, nudge: 0.4, escalate: 0.6, block: 0.8 }, trustDebt: undefined as never, lists: {}, resolved: {}, fallbackOnTimeout };
}

const ctx = (tier: AclTier, state?: StateStore): EvalContext => ({
  trace: { trace_id: 'tr-1', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'x' },
  agent: { id: 'a', tenant: 'acme', tier, tools: [], domains: [], registered: true },
  trustDebt: 0,
  nowMs: 1000,
  stateNamespace: 'acme:a',
  state,
});

const summary = (r: TripwireStageResult) => r.tripwires.map((t) => ({ id: t.id, fired: t.fired, decision: t.decision, code: t.error?.code }));

describe('tier latency budget of the tripwire stage', () => {
  it('uses the tier max of spec-decisions D3 unless configured or given explicitly', () => {
    expect((['ACL-0', 'ACL-1', 'ACL-2', 'ACL-3', 'ACL-4', 'ACL-5'] as AclTier[]).map((t) => stageBudgetMs(t))).toEqual([50, 100, 150, 200, 350, 1000]);
    const tiers = { ...DEFAULT_TIERS, 'ACL-3': { ...DEFAULT_TIERS['ACL-3'], latencyBudgetMs: { typical: 5, max: 20 } } };
    expect(stageBudgetMs('ACL-3', tiers)).toBe(20);
    expect(stageBudgetMs('ACL-3', tiers, 7)).toBe(7);
  });

  it('answers within budget normally and leaves no timer behind', async () => {
    const clock = new FakeClock();
    const store = new SlowStore();
    const p = runTripwireStage(bp([rate('r1')]), ctx('ACL-3', store), { timer: clock }) as Promise<TripwireStageResult>;
    clock.advance(40);
    store.calls[0]!.answer(1);
    const res = await p;
    expect(summary(res)).toEqual([{ id: 'r1', fired: false, decision: undefined, code: undefined }]);
    expect(res.intervention).toBe('ok');
    expect(res.tripwires[0]!.latencyMs).toBe(40);
    expect(clock.pending()).toBe(0);
  });

  it("caps a tripwire's own budget by what is left of the stage; the rest are not awaited and fail closed", async () => {
    const clock = new FakeClock();
    const store = new SlowStore();
    // ACL-3: stage budget 200 ms. r1 (own 300) never answers; r2 and r3 come after the budget is spent;
    // the in-memory tripwire and the rule still run.
    const b = bp([rate('r1'), rate('r2'), tw('sync_ok', 'tool == "x"', 'halt'), rate('r3', 50)], [rule('rule_ok', 'true')]);
    const p = runTripwireStage(b, ctx('ACL-3', store), { timer: clock }) as Promise<TripwireStageResult>;
    clock.advance(199);
    await flush();
    expect(store.calls.map((c) => c.key)).toEqual(['rate:3600000:r1']);
    clock.advance(1);
    const res = await p;
    expect(summary(res)).toEqual([
      { id: 'r1', fired: true, decision: 'block', code: 'STEWARD_STATE_TIMEOUT' },
      { id: 'r2', fired: true, decision: 'block', code: 'STEWARD_STATE_TIMEOUT' },
      { id: 'sync_ok', fired: false, decision: undefined, code: undefined },
      { id: 'r3', fired: true, decision: 'block', code: 'STEWARD_STATE_TIMEOUT' },
    ]);
    expect(res.tripwires[0]!.error!.message).toBe("'r1' timed out: the tripwire stage budget of 200 ms (ACL-3 max) ran out");
    expect(res.tripwires[1]!.error!.message).toBe("'r2' not awaited: the tripwire stage budget of 200 ms (ACL-3 max) is spent");
    expect(res.tripwires[1]!.reason).toBe("r2 failed (not evaluable: STEWARD_STATE_TIMEOUT: 'r2' not awaited: the tripwire stage budget of 200 ms (ACL-3 max) is spent; fails closed: block)");
    expect(res.rules).toEqual([{ id: 'rule_ok', passed: true, latencyMs: 0 }]);
    expect(res.intervention).toBe('block');
    expect(res.stage).toBe('tripwire');
    expect(res.latencyMs).toBe(200);
    expect(clock.pending()).toBe(0);
    // A late answer of a dropped call changes nothing.
    for (const c of store.calls) c.answer(1000);
    await flush();
    expect(res.intervention).toBe('block');
  });

  it("keeps a tripwire's own smaller budget, and a lower tier max applies earlier", async () => {
    const clock = new FakeClock();
    const store = new SlowStore();
    const p = runTripwireStage(bp([rate('r1', 30), rate('r2')]), ctx('ACL-5', store), { timer: clock }) as Promise<TripwireStageResult>;
    clock.advance(30);
    await flush();
    store.calls[1]!.answer(1);
    const res = await p;
    expect(res.tripwires[0]!.error!.message).toBe("'r1' exceeded its latency budget of 30 ms");
    expect(summary(res)[1]).toEqual({ id: 'r2', fired: false, decision: undefined, code: undefined });

    const tiers = { ...DEFAULT_TIERS, 'ACL-5': { ...DEFAULT_TIERS['ACL-5'], latencyBudgetMs: { typical: 5, max: 10 } } };
    const clock2 = new FakeClock();
    const q = runTripwireStage(bp([rate('r1', 30)]), ctx('ACL-5', new SlowStore()), { timer: clock2, tiers }) as Promise<TripwireStageResult>;
    clock2.advance(10);
    expect((await q).tripwires[0]!.error!.message).toBe("'r1' timed out: the tripwire stage budget of 10 ms (ACL-5 max) ran out");
  });

  it('caps async rules by the stage budget too', async () => {
    const clock = new FakeClock();
    const b = bp([], [{ ...rule('slow_rule', 'NOT exceeds_rate("k", 5, "1m")') }]);
    const p = runTripwireStage(b, ctx('ACL-0', new SlowStore()), { timer: clock }) as Promise<TripwireStageResult>;
    clock.advance(50);
    const res = await p;
    expect(res.rules[0]).toMatchObject({ id: 'slow_rule', passed: false, decision: 'block', error: { code: 'STEWARD_STATE_TIMEOUT' } });
  });
});

describe('tripwires fail closed whatever the contract fallback (spec-decisions D5)', () => {
  const cases: [FallbackOnTimeout | undefined, Intervention][] = [
    [undefined, 'block'],
    ['deny', 'block'],
    ['allow_and_log', 'block'],
    ['cached_decision', 'block'],
    ['escalate', 'escalate'],
  ];
  for (const [fallback, want] of cases) {
    it(`${fallback ?? 'unset'} → ${want} (not approved), for a timed-out tripwire and a failing rule`, async () => {
      const clock = new FakeClock();
      const broken: StateStore = { get: () => Promise.reject(new Error('down')), hit: () => Promise.reject(new Error('down')) };
      const b = bp([rate('r1')], [rule('state_rule', 'NOT exceeds_rate("k", 5, "1m")')], fallback);
      const viaBlueprint = await (runTripwireStage(b, ctx('ACL-2', broken), { timer: clock }) as Promise<TripwireStageResult>);
      expect(viaBlueprint.tripwires[0]!.decision).toBe(want);
      expect(viaBlueprint.rules[0]!.decision).toBe(want);
      expect(viaBlueprint.intervention).toBe(want);

      const p = runTripwireStage(bp([rate('r1')]), ctx('ACL-2', new SlowStore()), { timer: clock, fallbackOnTimeout: fallback }) as Promise<TripwireStageResult>;
      clock.advance(150);
      expect((await p).intervention).toBe(want);
    });
  }
});
