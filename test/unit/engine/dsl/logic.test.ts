/**
 * spec-decisions D11: a condition that cannot be evaluated fails closed. A custom boolean function that
 * returns anything but true/false makes the condition un-evaluable (STEWARD_DSL_EVAL, the stage then
 * applies its fail-closed fallback), in every compound form and arity, sync or async, under NOT or not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCondition, compileWhen, FunctionRegistry, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { runTripwireStage } from '../../../../src/engine/tripwires/index.js';
import type { CompiledBlueprint, EvalContext } from '../../../../src/engine/types.js';

const RESULTS: Record<string, unknown> = { t: true, f: false, u: undefined, n: null, s: 'yes', one: 1, zero: 0, obj: { ok: true }, arr: [true] };

const functions = new FunctionRegistry()
  .register({ name: 'geo_ok', params: [{ name: 'ip', type: 'any' }], returns: 'boolean', impl: ([ip]) => (ip === '1.1.1.1' ? true : ip === '6.6.6.6' ? false : undefined) })
  .register({ name: 'ret', params: [{ name: 'k', type: 'string', literal: true }], returns: 'boolean', impl: ([k]) => RESULTS[k as string] })
  .register({ name: 'ret_async', params: [{ name: 'k', type: 'string', literal: true }], returns: 'boolean', async: true, impl: ([k]) => Promise.resolve(RESULTS[k as string]) })
  .register({ name: 'num', params: [{ name: 'k', type: 'string', literal: true }], returns: 'number', impl: ([k]) => RESULTS[k as string] })
  .register({ name: 'anything', params: [{ name: 'k', type: 'string', literal: true }], returns: 'any', impl: ([k]) => RESULTS[k as string] });

const opts: DslCompileOptions = { lists: {}, internalDomains: [], internalCidrs: [], namedPatterns: {}, functions };

const ctx = (trace: Record<string, unknown> = {}): EvalContext => ({
  trace: { trace_id: 't', agent_id: 'a', timestamp: '', hook: 'tool_call', tool: 'x', ...trace },
  agent: { id: 'a', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true },
  trustDebt: 0,
  nowMs: 0,
  stateNamespace: 'acme:a',
});

type Outcome = boolean | 'error';

async function run(cond: unknown, c: EvalContext = ctx()): Promise<Outcome> {
  const { condition, problems } = compileCondition(cond, opts);
  expect(problems).toEqual([]);
  let r: unknown;
  try {
    r = await condition!.evaluate(c);
  } catch (e) {
    expect(e).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
    return 'error';
  }
  expect(typeof r, `${JSON.stringify(cond)} returned ${String(r)}`).toBe('boolean');
  return r as boolean;
}

describe('custom boolean functions returning a non-boolean', () => {
  it('the reviewer case: every arity of all: agrees, and none of them passes', async () => {
    const unknown = ctx({ ip: '9.9.9.9' });
    const forms = ['geo_ok(ip)', 'NOT geo_ok(ip)', { all: ['geo_ok(ip)', 'tool == "x"'] }, { all: ['geo_ok(ip)', 'tool == "x"', true] }, { all: ['geo_ok(ip)', 'tool == "x"', true, true] }, { any: ['geo_ok(ip)', false, false, false] }, { NOT: { all: ['geo_ok(ip)', true, true, true] } }];
    for (const f of forms) expect(await run(f, unknown), JSON.stringify(f)).toBe('error');
    expect(await run({ all: ['geo_ok(ip)', 'tool == "x"', true, true] }, ctx({ ip: '1.1.1.1' }))).toBe(true);
    expect(await run({ all: ['geo_ok(ip)', 'tool == "x"', true, true] }, ctx({ ip: '6.6.6.6' }))).toBe(false);
  });

  it('rejects every non-boolean result, sync and async', async () => {
    for (const k of ['u', 'n', 's', 'one', 'zero', 'obj', 'arr']) {
      expect(await run(`ret("${k}")`), k).toBe('error');
      expect(await run(`NOT ret("${k}")`), k).toBe('error');
      expect(await run(`ret_async("${k}")`), k).toBe('error');
      expect(await run(`NOT ret_async("${k}")`), k).toBe('error');
    }
    expect(await run('ret("t")')).toBe(true);
    expect(await run('NOT ret_async("t")')).toBe(false);
  });

  it('checks other declared result types too; a missing result stays missing', async () => {
    expect(await run('num("one") == 1')).toBe(true);
    expect(await run('num("u") > 0')).toBe(false);
    expect(await run('num("n") > 0')).toBe(false);
    expect(await run('num("s") > 0')).toBe('error');
    expect(await run('num("t") > 0')).toBe('error');
    // Untyped results keep the documented rule: true only when exactly true.
    expect(await run('anything("s")')).toBe(false);
    expect(await run('anything("t")')).toBe(true);
  });
});

describe('through the tripwire stage', () => {
  it('an invariant whose custom function returns undefined takes the fail-closed fallback, in every form', async () => {
    for (const condition of ['geo_ok(ip)', 'NOT geo_ok(ip)', { all: ['geo_ok(ip)', 'tool == "x"', true, true] }, { any: ['geo_ok(ip)', false, false, false] }]) {
      const bp = {
        id: 'test/bp@1.0', version: '1.0.0', description: '', chain: [], scope: {}, rules: [], metrics: [], ctq: { aggregation: 'weighted' }, scoring: { ok: 0.2, nudge: 0.4, escalate: 0.6, block: 0.8 }, trustDebt: undefined as never, lists: {}, resolved: {},
        tripwires: [{ id: 'geo', when: compileWhen({}), condition: compileCondition(condition, opts).condition!, evalTier: 0, latencyBudgetMs: 50, requiresState: false, severity: 'standard', onFail: { decision: 'nudge', reason: 'geo' } }],
      } as unknown as CompiledBlueprint;
      const res = await runTripwireStage(bp, ctx({ ip: '9.9.9.9' }));
      expect(res.intervention, JSON.stringify(condition)).toBe('block');
      expect(res.tripwires[0]!.error?.code).toBe('STEWARD_DSL_EVAL');
    }
  });
});

// Property: all:/any: of n = 1..6 items (sync literals, custom results of every kind, async ones),
// possibly under NOT, equals a left-to-right reference: the first item that decides wins, and
// reaching a non-boolean before that makes the whole condition un-evaluable.
const ITEM_KINDS = ['true', 'false', 't', 'f', 'u', 'n', 's', 'one', 'zero', 'obj', 'at', 'af', 'au', 'as'] as const;
type Kind = (typeof ITEM_KINDS)[number];

function itemSource(k: Kind): string | boolean {
  if (k === 'true') return true;
  if (k === 'false') return false;
  if (k === 'at' || k === 'af' || k === 'au' || k === 'as') {
    const key = k === 'at' ? 't' : k === 'af' ? 'f' : k === 'au' ? 'u' : 's';
    return `ret_async("${key}")`;
  }
  return `ret("${k}")`;
}

function itemValue(k: Kind): unknown {
  if (k === 'true' || k === 't' || k === 'at') return true;
  if (k === 'false' || k === 'f' || k === 'af') return false;
  return 'bad';
}

function reference(kind: 'all' | 'any', items: Kind[], neg: boolean): Outcome {
  const stop = kind === 'any';
  for (const it of items) {
    const v = itemValue(it);
    if (v === 'bad') return 'error';
    if (v === stop) return neg ? !stop : stop;
  }
  return neg ? stop : !stop;
}

describe('compound forms agree for every arity', () => {
  it('all:/any: with n = 1..6 items of any mix of true/false/non-boolean, plain and under NOT', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('all' as const, 'any' as const), fc.array(fc.constantFrom(...ITEM_KINDS), { minLength: 1, maxLength: 6 }), fc.boolean(), async (kind, items, neg) => {
        const inner = { [kind]: items.map(itemSource) };
        const cond = neg ? { NOT: inner } : inner;
        expect(await run(cond), JSON.stringify(cond)).toBe(reference(kind, items, neg));
      }),
      { numRuns: 3000 },
    );
  });

  it('the string forms (AND/OR chains) agree with the structured ones', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('AND', 'OR'), fc.array(fc.constantFrom(...ITEM_KINDS), { minLength: 1, maxLength: 6 }), async (op, items) => {
        const src = items.map((k) => String(itemSource(k))).join(` ${op} `);
        expect(await run(src), src).toBe(reference(op === 'AND' ? 'all' : 'any', items, false));
      }),
      { numRuns: 1000 },
    );
  });
});
