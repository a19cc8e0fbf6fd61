import { describe, expect, it } from 'vitest';
import { compileCondition, compileWhen, FunctionRegistry, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import { checkTripwireTier, failClosedDecision, runTripwireStage } from '../../../../src/engine/tripwires/index.js';
import type { CompiledBlueprint, CompiledRule, CompiledTripwire, EvalContext, Intervention, StateStore, Trace } from '../../../../src/engine/types.js';

const registry = new FunctionRegistry()
  .register({ name: 'slow_ok', params: [], returns: 'boolean', async: true, impl: () => new Promise((r) => setTimeout(() => r(true), 200)) })
  .register({ name: 'boom', params: [], returns: 'boolean', impl: () => { throw new Error('kaput'); } });

const opts: DslCompileOptions = { lists: { approved_tools: ['execute_trade'] }, internalDomains: [], internalCidrs: [], namedPatterns: {}, functions: registry };

function cond(c: unknown) {
  const r = compileCondition(c, opts);
  if (!r.condition) throw new Error(JSON.stringify(r.problems));
  return r.condition;
}

function tw(id: string, condition: unknown, decision: Intervention, extra: Partial<CompiledTripwire> = {}): CompiledTripwire {
  return { id, when: compileWhen({ hook: 'tool_call' }), condition: cond(condition), evalTier: 0, latencyBudgetMs: 50, requiresState: false, severity: 'standard', onFail: { decision, reason: `${id} failed` }, ...extra };
}

function rule(id: string, condition: unknown, decision: Intervention, when: Record<string, unknown> = {}): CompiledRule {
  return { id, when: compileWhen(when), condition: cond(condition), onFail: { decision, reason: `${id} failed` } };
}

function bp(tripwires: CompiledTripwire[], rules: CompiledRule[] = []): CompiledBlueprint {
  return { id: 'test/bp@1.0', version: '1.0.0', description: '', chain: [], scope: {}, tripwires, rules, metrics: [], ctq: { aggregation: 'weighted' }, scoring: { ok: 0.2, nudge: 0.4, escalate: 0.6, block: 0.8 }, trustDebt: undefined as never, lists: {}, resolved: {} };
}

function ctx(trace: Partial<Trace>, state?: StateStore): EvalContext {
  const t: Trace = { trace_id: 'tr-1', agent_id: 'trader-1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', ...trace };
  return { trace: t, agent: { id: 'trader-1', tenant: 'acme', tier: 'ACL-3', tools: [], domains: [], registered: true }, trustDebt: 0, nowMs: 1000, stateNamespace: 'acme:trader-1', state };
}

describe('runTripwireStage', () => {
  const blueprint = bp(
    [
      tw('trade_size_limit', 'args.trade_value <= 100000', 'halt', { severity: 'severe', when: compileWhen({ hook: 'tool_call', tool: 'execute_trade' }) }),
      tw('approved_tool', 'in_allowlist(tool, "approved_tools")', 'block', { severity: 'critical' }),
    ],
    [rule('volume_cap', 'args.trade_value <= 50000', 'escalate', { tool: 'execute_trade' }), rule('nudge_rule', 'args.note != "x"', 'nudge')],
  );

  it('passes a benign trace synchronously with stage none', () => {
    const r = runTripwireStage(blueprint, ctx({ tool: 'execute_trade', args: { trade_value: 1000, note: 'ok' } }));
    expect(r).not.toBeInstanceOf(Promise);
    const res = r as Exclude<typeof r, Promise<unknown>>;
    expect(res.intervention).toBe('ok');
    expect(res.stage).toBe('none');
    expect(res.tripwires.map((t) => [t.id, t.fired])).toEqual([['trade_size_limit', false], ['approved_tool', false]]);
    expect(res.rules.map((x) => x.passed)).toEqual([true, true]);
    expect(res.reasons).toEqual([]);
    expect(res.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('halt short-circuits the remaining tripwires and all rules', () => {
    const res = runTripwireStage(blueprint, ctx({ tool: 'execute_trade', args: { trade_value: 200000 } })) as Awaited<ReturnType<typeof runTripwireStage>>;
    expect(res.intervention).toBe('halt');
    expect(res.halted).toBe(true);
    expect(res.stage).toBe('tripwire');
    expect(res.severity).toBe('severe');
    expect(res.tripwires.map((t) => t.id)).toEqual(['trade_size_limit']);
    expect(res.rules).toEqual([]);
    expect(res.reasons).toEqual(['trade_size_limit failed']);
  });

  it('takes the most severe of tripwires and rules and records where it came from', () => {
    const res = runTripwireStage(blueprint, ctx({ tool: 'execute_trade', args: { trade_value: 60000, note: 'x' } })) as Awaited<ReturnType<typeof runTripwireStage>>;
    expect(res.intervention).toBe('escalate');
    expect(res.stage).toBe('rule');
    expect(res.severity).toBeUndefined();
    expect(res.rules.map((x) => [x.id, x.passed, x.decision])).toEqual([['volume_cap', false, 'escalate'], ['nudge_rule', false, 'nudge']]);
    expect(res.reasons).toEqual(['volume_cap failed', 'nudge_rule failed']);
  });

  it('a block tripwire beats an escalate rule', () => {
    const res = runTripwireStage(blueprint, ctx({ tool: 'shell', args: { trade_value: 60000 } })) as Awaited<ReturnType<typeof runTripwireStage>>;
    expect(res.intervention).toBe('block');
    expect(res.stage).toBe('tripwire');
    expect(res.severity).toBe('critical');
    // volume_cap's when (tool: execute_trade) does not match this trace.
    expect(res.rules.map((x) => x.id)).toEqual(['nudge_rule']);
  });

  it('rules never halt (spec-decisions D1)', () => {
    const res = runTripwireStage(bp([], [rule('r', 'false', 'halt')]), ctx({})) as Awaited<ReturnType<typeof runTripwireStage>>;
    expect(res.intervention).toBe('block');
    expect(res.halted).toBe(false);
  });

  it('skips tripwires whose when does not match', () => {
    const res = runTripwireStage(blueprint, ctx({ hook: 'output', content: 'hi' })) as Awaited<ReturnType<typeof runTripwireStage>>;
    expect(res.tripwires).toEqual([]);
    expect(res.intervention).toBe('nudge');
  });

  it('a throwing condition fails closed (block) with the error recorded', () => {
    const res = runTripwireStage(bp([tw('b', 'boom()', 'nudge')]), ctx({})) as Awaited<ReturnType<typeof runTripwireStage>>;
    expect(res.intervention).toBe('block');
    expect(res.tripwires[0]!.error?.code).toBe('STEWARD_DSL_EVAL');
    expect(res.tripwires[0]!.fired).toBe(true);
  });

  it('async conditions return a Promise and use the state store', async () => {
    const state = new MemoryStateStore({ 'acme:trader-1': { trades_today: 49 } });
    const b = bp([tw('daily', "storage.get('trades_today') < 50", 'block', { evalTier: 1, requiresState: true, latencyBudgetMs: 200 })]);
    const r = runTripwireStage(b, ctx({}, state));
    expect(r).toBeInstanceOf(Promise);
    expect((await r).intervention).toBe('ok');
    await state.set('acme:trader-1', 'trades_today', 50);
    expect((await runTripwireStage(b, ctx({}, state))).intervention).toBe('block');
  });

  it('an async condition over budget fails closed; the fallback is configurable', async () => {
    const b = bp([tw('slow', 'slow_ok()', 'nudge', { evalTier: 1, latencyBudgetMs: 20 })], [rule('after', 'true', 'block')]);
    const res = await runTripwireStage(b, ctx({}));
    expect(res.intervention).toBe('block');
    expect(res.tripwires[0]!.error?.code).toBe('STEWARD_STATE_TIMEOUT');
    expect(res.rules.map((x) => x.passed)).toEqual([true]);
    const esc = await runTripwireStage(b, ctx({}), { fallbackOnTimeout: 'escalate' });
    expect(esc.intervention).toBe('escalate');
    // Fail closed (spec-decisions D5): allow_and_log must not turn an unchecked tripwire into an approved flag.
    const logged = await runTripwireStage(b, ctx({}), { fallbackOnTimeout: 'allow_and_log' });
    expect(logged.intervention).toBe('block');
  });

  it('rate-limit hits are idempotent by eventId (default trace_id): a reused trace_id with another eventId still counts', async () => {
    const state = new MemoryStateStore();
    const b = bp([tw('rate', 'NOT exceeds_rate(agent_id, 2, "1m")', 'block', { evalTier: 1, requiresState: true })]);
    const run = async (eventId?: string) => (await runTripwireStage(b, { ...ctx({}, state), eventId })).intervention;
    // The same trace redelivered (same id) is one hit; three distinct event ids under one trace_id are three.
    expect([await run(), await run(), await run()]).toEqual(['ok', 'ok', 'ok']);
    expect([await run('tr-1#a'), await run('tr-1#b')]).toEqual(['ok', 'block']);
  });

  it('a missing state store fails closed', async () => {
    const b = bp([tw('rate', 'NOT exceeds_rate(agent_id, 5, "1m")', 'nudge', { evalTier: 1, requiresState: true })]);
    const res = await runTripwireStage(b, ctx({}));
    expect(res.intervention).toBe('block');
    expect(res.tripwires[0]!.error?.code).toBe('STEWARD_STATE_UNAVAILABLE');
  });

  it('a state error fails closed', async () => {
    const broken: StateStore = { get: () => Promise.reject(new Error('down')), hit: () => Promise.reject(new Error('down')) };
    const b = bp([tw('rate', 'NOT exceeds_rate(agent_id, 5, "1m")', 'nudge', { evalTier: 1, requiresState: true })]);
    const res = await runTripwireStage(b, ctx({}, broken));
    expect(res.intervention).toBe('block');
    expect(res.tripwires[0]!.error).toBeDefined();
  });
});

describe('failClosedDecision and tier checks', () => {
  it('maps the governance-contract fallbacks to a fail-closed decision (never approved)', () => {
    expect([undefined, 'deny', 'escalate', 'allow_and_log', 'cached_decision'].map((f) => failClosedDecision(f as never))).toEqual(['block', 'block', 'escalate', 'block', 'block']);
  });
  it('rejects stateful functions in tier 0 and eval_tier > 1; requires_state is implied', () => {
    const c = cond('NOT exceeds_rate(agent_id, 5, "1m")');
    expect(checkTripwireTier({ id: 'x', evalTier: 0, requiresState: true, condition: c }).map((p) => p.message)).toEqual([expect.stringContaining('eval_tier: 1')]);
    expect(checkTripwireTier({ id: 'x', evalTier: 1, requiresState: false, condition: c })).toEqual([]);
    expect(checkTripwireTier({ id: 'x', evalTier: 1, requiresState: true, condition: c })).toEqual([]);
    expect(checkTripwireTier({ id: 'x', evalTier: 2, requiresState: false, condition: cond('a == 1') })[0]!.code).toBe('STEWARD_BLUEPRINT_TIER');
    expect(checkTripwireTier({ id: 'x', evalTier: 0, requiresState: false, condition: cond('a == 1') })).toEqual([]);
  });
});

describe('compileWhen', () => {
  const t = (x: Partial<Trace>): Trace => ({ trace_id: 't', agent_id: 'a', timestamp: '', hook: 'tool_call', ...x });
  it('matches keys, dotted paths, nested objects and any-of arrays strictly', () => {
    expect(compileWhen({})(t({}))).toBe(true);
    expect(compileWhen({ hook: 'tool_call', tool: ['a', 'b'] })(t({ tool: 'b' }))).toBe(true);
    expect(compileWhen({ hook: 'tool_call', tool: ['a', 'b'] })(t({ tool: 'c' }))).toBe(false);
    expect(compileWhen({ 'args.mode': 'live' })(t({ args: { mode: 'live' } }))).toBe(true);
    expect(compileWhen({ args: { mode: 'live' } })(t({ args: { mode: 'paper' } }))).toBe(false);
    expect(compileWhen({ response_size: 10 })(t({ response_size: '10' as never }))).toBe(false);
    expect(compileWhen({ tool: 'x', hook: 'output', 'context.env': 'prod' })(t({ tool: 'x', hook: 'output', context: { env: 'prod' } }))).toBe(true);
    expect(compileWhen({ constructor: undefined })(t({}))).toBe(true);
  });
});
