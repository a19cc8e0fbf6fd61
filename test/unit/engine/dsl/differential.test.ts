/**
 * Differential test: the optimised compiler (fused leaves, NOT pushed down, same-field any) agrees
 * with a naive reference interpreter of the documented semantics on random expressions and traces.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Node } from '../../../../src/engine/dsl/ast.js';
import { compileCondition, DEFAULT_DSL_LIMITS, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { parseCondition } from '../../../../src/engine/dsl/structured.js';
import { contains, equals, notEquals, ordered, present, step } from '../../../../src/engine/dsl/values.js';
import type { EvalContext } from '../../../../src/engine/types.js';

const LIST = ['a', 'b', 'x.com'];
const opts: DslCompileOptions = { lists: { l: LIST }, internalDomains: [], internalCidrs: [], namedPatterns: {} };

function get(trace: Record<string, unknown>, segs: (string | number)[]): unknown {
  let v: unknown = trace;
  for (const s of segs) v = step(v, s);
  return v;
}

function ref(n: Node, t: Record<string, unknown>): unknown {
  switch (n.kind) {
    case 'literal':
      return n.value;
    case 'field':
      return get(t, n.segments);
    case 'not':
      return !(ref(n.operand, t) === true);
    case 'all':
      return n.items.every((i) => ref(i, t) === true);
    case 'any':
      return n.items.some((i) => ref(i, t) === true);
    case 'call': {
      const v = ref(n.args[0]!, t);
      if (n.name === 'exists') return present(v);
      if (n.name === 'in_allowlist') return Array.isArray(v) ? v.length > 0 && v.every((x) => typeof x === 'string' && LIST.includes(x)) : typeof v === 'string' && LIST.includes(v);
      if (n.name === 'in_denylist') return Array.isArray(v) ? v.some((x) => typeof x === 'string' && LIST.includes(x)) : typeof v === 'string' && LIST.includes(v);
      throw new Error(n.name);
    }
    case 'compare': {
      const a = ref(n.left, t);
      const b = ref(n.right, t);
      switch (n.op) {
        case '==':
          return equals(a, b);
        case '!=':
          return notEquals(a, b);
        case 'contains':
          return contains(a, b);
        case 'matches':
          throw new Error('not generated');
        default:
          return ordered(n.op, a, b);
      }
    }
  }
}

const field = fc.constantFrom('f', 'g', 'o.p', 'o.q', 'arr', 'o');
const lit = fc.constantFrom('"a"', '"b"', '"ab"', '1', '2', '-1', 'true', '"x.com"');
const leaf = fc.oneof(
  fc.tuple(field, fc.constantFrom('==', '!=', 'contains'), lit).map(([f, o, v]) => `${f} ${o} ${v}`),
  fc.tuple(field, fc.constantFrom('>', '>=', '<', '<='), fc.constantFrom('"a"', '"b"', '1', '2', '-1')).map(([f, o, v]) => `${f} ${o} ${v}`),
  fc.tuple(field, fc.constantFrom('in_allowlist', 'in_denylist')).map(([f, fn]) => `${fn}(${f}, "l")`),
  field.map((f) => `exists(${f})`),
  fc.tuple(field, fc.array(lit, { minLength: 2, maxLength: 4 }), fc.constantFrom('==', 'contains')).map(([f, vs, o]) => `any: [${vs.map((v) => `${f} ${o} ${v}`).join(', ')}]`),
);
const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('e').map((e) => `NOT (${e})`),
    fc.tuple(tie('e'), tie('e'), fc.constantFrom('AND', 'OR')).map(([a, b, op]) => `(${a}) ${op} (${b})`),
    fc.array(tie('e'), { minLength: 1, maxLength: 3 }).map((xs) => `all: [${xs.join(', ')}]`),
  ),
})).e;
const value = fc.oneof(fc.constantFrom('a', 'b', 'ab', 'x.com', 1, 2, -1, true, false, null), fc.constant(['a', 'b']), fc.constant(['a', 1]), fc.constant([]));
const trace = fc.record(
  { f: value, g: value, arr: fc.oneof(value, fc.constant(['ab', 'a'])), o: fc.oneof(value, fc.record({ p: value, q: value }, { requiredKeys: [] })) },
  { requiredKeys: [] },
);

function ctx(t: Record<string, unknown>): EvalContext {
  return { trace: { trace_id: 't', agent_id: 'x', timestamp: '', hook: 'h', ...t }, agent: { id: 'x', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true }, trustDebt: 0, nowMs: 0, stateNamespace: 't:x' };
}

describe('compiled conditions agree with a reference interpreter', () => {
  it('on random expressions and traces', () => {
    fc.assert(
      fc.property(expr, fc.array(trace, { minLength: 1, maxLength: 5 }), (src, traces) => {
        const { condition, problems } = compileCondition(src, opts);
        expect(problems).toEqual([]);
        const node = parseCondition(src, DEFAULT_DSL_LIMITS).node!;
        for (const t of traces) {
          const full = { trace_id: 't', agent_id: 'x', timestamp: '', hook: 'h', ...t };
          expect(condition!.evaluate(ctx(t)), `${src} on ${JSON.stringify(t)}`).toBe(ref(node, full) === true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
