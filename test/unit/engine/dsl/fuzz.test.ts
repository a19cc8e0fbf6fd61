/** Property tests: the parser and the evaluator are total over hostile input. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCondition, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import type { EvalContext } from '../../../../src/engine/types.js';

const opts: DslCompileOptions = {
  lists: { l: ['a', 'b'], approved_endpoints: ['x.com'] },
  internalDomains: ['corp.example.com'],
  internalCidrs: [],
  namedPatterns: {},
};

const CODES = new Set(['STEWARD_DSL_PARSE', 'STEWARD_DSL_LIMIT', 'STEWARD_DSL_UNKNOWN_FUNCTION', 'STEWARD_DSL_ARITY', 'STEWARD_DSL_TYPE', 'STEWARD_DSL_REGEX', 'STEWARD_DSL_UNKNOWN_LIST']);

function checkProblems(src: string, problems: { code: string; offset?: number; path: string }[]): void {
  for (const p of problems) {
    expect(CODES.has(p.code), p.code).toBe(true);
    expect(p.path).toBe('');
    expect(typeof p.offset).toBe('number');
    expect(p.offset!).toBeGreaterThanOrEqual(0);
    expect(p.offset!).toBeLessThanOrEqual(src.length);
  }
}

// Token soup close to the grammar finds far more interesting paths than uniform random text.
const tokenArb = fc.constantFrom(
  'args.x', 'tool', 'content', 'destination', 'trust_debt', 'agent.tier', 'sources[0].id', '(', ')', '[', ']', ',', ':', '.', 'NOT', 'not', '!', 'AND', 'OR', '&&', '||',
  'all:', 'any:', '==', '!=', '>', '>=', '<', '<=', 'contains', 'matches', '=', '1', '-2.5', '10MB', '1m', '"x"', "'y'", '"(a"', '"\\d+"', 'true', 'false', 'null',
  'is_external(', 'in_allowlist(', 'in_denylist(', 'matches_regex(', 'contains_entity(', 'exceeds_rate(', 'storage.get(', 'exists(', '"l"', '"ssn"', '"SSN_PATTERN"', '"1h"', 'nope(', '#', '"', '\\',
);
const soupArb = fc.array(tokenArb, { maxLength: 30 }).map((ts) => ts.join(' '));

// Well-formed ASTs rendered to text: must always compile.
const fieldArb = fc.constantFrom('args.x', 'args.y', 'tool', 'content', 'destination', 'response_size', 'context.tags', 'trust_debt');
const valueArb = fc.oneof(fc.integer({ min: -1e6, max: 1e6 }).map(String), fc.constantFrom('"a"', '"DROP"', '10MB', 'true', '[1, 2]'));
const leafArb = fc.oneof(
  fc.tuple(fieldArb, fc.constantFrom('==', '!=', 'contains'), valueArb).map(([f, o, v]) => `${f} ${o} ${v}`),
  fc.tuple(fieldArb, fc.constantFrom('>', '>=', '<', '<='), fc.integer().map(String)).map(([f, o, v]) => `${f} ${o} ${v}`),
  fieldArb.map((f) => `is_external(${f})`),
  fieldArb.map((f) => `in_allowlist(${f}, "l")`),
  fieldArb.map((f) => `contains_entity(${f}, "secret")`),
  fieldArb.map((f) => `matches_regex(${f}, "SSN_PATTERN")`),
  fieldArb.map((f) => `${f} matches "^a.*b$"`),
);
const exprArb: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leafArb,
    tie('e').map((e) => `NOT (${e})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a}) AND (${b})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `any: [${a}, ${b}]`),
  ),
})).e;

const structuredArb: fc.Arbitrary<unknown> = fc.letrec<{ s: unknown }>((tie) => ({
  s: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    exprArb,
    fc.array(tie('s'), { minLength: 1, maxLength: 3 }).map((xs) => ({ all: xs })),
    fc.array(tie('s'), { minLength: 1, maxLength: 3 }).map((xs) => ({ any: xs })),
    tie('s').map((x) => ({ NOT: x })),
  ),
})).s;

const weird = fc.oneof(
  fc.anything({ maxDepth: 4, withNullPrototype: true, withObjectString: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true }),
  fc.string({ maxLength: 2000 }),
  fc.constant('x'.repeat(200_000)),
  fc.constant('4111 1111 1111 1111 '.repeat(2000)),
  fc.constant(Number.NaN),
  fc.constant(-0),
);

function ctx(trace: Record<string, unknown>): EvalContext {
  return {
    trace: { trace_id: 't', agent_id: 'a', timestamp: '', hook: 'tool_call', ...trace },
    agent: { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true },
    trustDebt: 0,
    nowMs: 0,
    stateNamespace: 't:a',
  };
}

describe('DSL parser properties', () => {
  it('random text never throws; problems are positioned inside the text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), fc.string({ maxLength: 100, unit: 'binary' }), soupArb), (src) => {
        const r = compileCondition(src, opts);
        expect(r.condition === undefined).toBe(r.problems.length > 0);
        checkProblems(src, r.problems);
      }),
      { numRuns: 1500 },
    );
  });

  it('well-formed random expressions always compile and evaluate to a boolean on random traces', () => {
    fc.assert(
      fc.property(exprArb, fc.dictionary(fc.constantFrom('args', 'tool', 'content', 'destination', 'response_size', 'context'), weird), (src, trace) => {
        const r = compileCondition(src, opts);
        expect(r.problems).toEqual([]);
        const v = r.condition!.evaluate(ctx(trace));
        expect(typeof v).toBe('boolean');
      }),
      { numRuns: 1500 },
    );
  });

  it('structured conditions compile; problems carry paths that exist', () => {
    fc.assert(
      fc.property(structuredArb, (cond) => {
        const r = compileCondition(cond, opts);
        for (const p of r.problems) expect(p.code).toBe('STEWARD_DSL_LIMIT');
        if (r.condition) expect(typeof r.condition.evaluate(ctx({ args: { x: 1 } }))).toBe('boolean');
      }),
      { numRuns: 500 },
    );
  });

  it('deep nesting is stopped by limits, never by a stack overflow', () => {
    for (const n of [100, 10_000, 100_000]) {
      for (const src of ['('.repeat(n) + 'a' + ')'.repeat(n), 'NOT '.repeat(n) + 'a', '['.repeat(n), 'a == 1 AND '.repeat(n * 4) + 'b']) {
        const r = compileCondition(src, opts);
        expect(r.problems[0]?.code).toBe('STEWARD_DSL_LIMIT');
      }
      let nested: unknown = 'a == 1';
      for (let i = 0; i < n; i++) nested = { NOT: nested };
      expect(compileCondition(nested, opts).problems[0]?.code).toBe('STEWARD_DSL_LIMIT');
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.all = [cyclic];
    expect(compileCondition(cyclic, opts).problems[0]?.code).toBe('STEWARD_DSL_LIMIT');
  });

  it('rejects non-condition values with a problem, not a throw', () => {
    for (const v of [null, undefined, 42, [], ['a'], {}, { all: 'x' }, { NOT: null }, Symbol('s'), () => 1]) {
      const r = compileCondition(v, opts);
      expect(r.condition).toBeUndefined();
      expect(r.problems.length).toBeGreaterThan(0);
    }
  });
});

describe('evaluation on hostile traces', () => {
  const conditions = [
    'args.trade_value <= 100000',
    'NOT (args.x > 5)',
    'content contains "DROP"',
    'content matches "(a|b)*c"',
    'is_external(destination)',
    'in_allowlist(destination, "approved_endpoints")',
    'args contains 1',
    'args == [1, 2]',
    'sources[0].trust >= 0.5',
    'content.length < 100',
    ...['credit_card', 'ssn', 'bank_account', 'email', 'phone', 'ip_address', 'secret'].map((e) => `contains_entity(args, "${e}")`),
    'matches_regex(args, "EMAIL_PATTERN")',
  ].map((s) => compileCondition(s, opts).condition!);

  it('never throws and always returns a boolean', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('args', 'content', 'destination', 'sources', 'constructor', '__proto__', 'toString'), weird), (trace) => {
        for (const c of conditions) expect(typeof c.evaluate(ctx(trace))).toBe('boolean');
      }),
      { numRuns: 200 },
    );
  });

  it('catastrophic-backtracking input stays linear on RE2', () => {
    const c = compileCondition('content matches "^(a+)+$"', opts).condition!;
    const start = performance.now();
    expect(c.evaluate(ctx({ content: 'a'.repeat(50_000) + '!' }))).toBe(false);
    // Not a timing assertion on speed, just a guard against exponential blow-up (seconds vs. millis).
    expect(performance.now() - start).toBeLessThan(10_000);
  });
});
