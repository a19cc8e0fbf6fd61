/**
 * AST → closures. Each node becomes `(ctx) => value`; nodes that touch state may return a Promise
 * and are marked async, so the common (sync) path never allocates a Promise. Type, arity, list,
 * regex and function problems are collected across the whole condition.
 */
import type { Node } from './ast.js';
import { compileCall } from './builtins.js';
import { andThen, problem, type CNode, type CompileEnv, type DslType, type Fn } from './compile-types.js';
import { compileRegex } from './regex.js';
import { fuseCompare, fuseContainsAny, fuseEqualsAny } from './fused.js';
import { compileGetter, contains, equals, isPromise, notEquals, ordered, simplePath } from './values.js';
import type { EvalContext } from '../types.js';
import { StewardError } from '../../errors.js';

// Kept as re-exports: the shared compile types live in the leaf module compile-types.ts.
export { andThen, problem, type CNode, type Fn } from './compile-types.js';

/**
 * Compiles a node that must yield a boolean (a condition or a compound item). `neg` asks for the
 * negation: NOT is pushed down (De Morgan through all/any) and folded into fused leaves, so
 * `NOT all: [...]` costs no extra call per level.
 */
export function compileBool(node: Node, env: CompileEnv, neg = false): CNode {
  if (node.kind === 'not') return compileBool(node.operand, env, !neg);
  if (node.kind === 'all' || node.kind === 'any') {
    const fused = fuseLogical(node, neg);
    if (fused) return fused;
    const kind = neg ? (node.kind === 'all' ? 'any' : 'all') : node.kind;
    return compileLogical(kind, node.items.map((n) => compileBool(n, env, neg)), node);
  }
  const c = node.kind === 'compare' ? compileCompare(node, env, neg) : node.kind === 'call' ? compileCall(node, env, compileNode, neg) : compileNode(node, env);
  const b = toBool(c, env);
  return neg && !b.negApplied ? negate(b) : b;
}

function toBool(c: CNode, env: CompileEnv): CNode {
  if (c.type === 'boolean') return c;
  if (c.type === 'any') {
    const f = c.fn;
    // A bare field or untyped function is true only when it is exactly `true`.
    const fn: Fn = c.async ? (ctx) => andThen(f(ctx), (v) => v === true) : (ctx) => f(ctx) === true;
    return { ...c, type: 'boolean', fn, negApplied: false };
  }
  problem(env, c.node, 'STEWARD_DSL_TYPE', `expected a condition (boolean), found a ${c.type}`);
  return { ...c, type: 'boolean', fn: () => false, negApplied: false };
}

// Like compileLogical: NOT of a non-boolean is un-evaluable, never `true`.
const not = (v: unknown): boolean => (v === false ? true : v === true ? false : notBoolean(v));

function negate(c: CNode): CNode {
  const f = c.fn;
  return { ...c, fn: c.async ? (ctx) => andThen(f(ctx), not) : (ctx) => not(f(ctx)), negApplied: true };
}

/** any/NOT any over one field with string literals (`contains`) or primitives (`==`) → one closure. */
function fuseLogical(node: Extract<Node, { kind: 'all' | 'any' }>, neg: boolean): CNode | undefined {
  if (node.kind !== 'any' || node.items.length < 2) return undefined;
  let path: string | undefined;
  let op: string | undefined;
  const ks: (string | number | boolean)[] = [];
  for (const it of node.items) {
    if (it.kind !== 'compare' || it.left.kind !== 'field' || it.right.kind !== 'literal') return undefined;
    if (it.op !== 'contains' && it.op !== '==') return undefined;
    const v = it.right.value;
    if (it.op === 'contains' ? typeof v !== 'string' : typeof v === 'object') return undefined;
    if (path !== undefined && (it.left.text !== path || it.op !== op)) return undefined;
    path = it.left.text;
    op = it.op;
    ks.push(v as string | number | boolean);
  }
  const p = simplePath((node.items[0] as Extract<Node, { kind: 'compare' }>).left.kind === 'field' ? ((node.items[0] as Extract<Node, { kind: 'compare' }>).left as Extract<Node, { kind: 'field' }>).segments : []);
  if (!p) return undefined;
  const fn = op === 'contains' ? fuseContainsAny(p, ks as string[], neg) : fuseEqualsAny(p, ks, neg);
  return { type: 'boolean', async: false, fn, node, negApplied: true };
}

export function compileNode(node: Node, env: CompileEnv): CNode {
  switch (node.kind) {
    case 'literal': {
      const value = node.value;
      const type: DslType = Array.isArray(value) ? 'array' : (typeof value as DslType);
      return { type, async: false, fn: () => value, literal: { value, unit: node.unit }, node };
    }
    case 'field':
      if (!env.taskRefs && typeof node.segments[0] === 'string' && node.segments[0].startsWith('$')) {
        problem(env, node, 'STEWARD_DSL_PARSE', `'${node.segments[0]}' is a task reference, allowed only in ACM plan guards`);
      }
      return { type: 'any', async: false, fn: compileGetter(node.segments), node };
    case 'call':
      return compileCall(node, env, compileNode, false);
    case 'not':
    case 'all':
    case 'any':
      return compileBool(node, env);
    case 'compare':
      return compileCompare(node, env, false);
  }
}

/**
 * Items are booleans by construction (custom results are checked where they enter); an item that
 * still yields anything else makes the whole condition un-evaluable rather than being read as true or
 * false, since which one fails closed depends on the NOTs around it. Every arity behaves the same.
 */
function notBoolean(v: unknown): never {
  throw new StewardError('STEWARD_DSL_EVAL', `a condition item yielded ${v === null ? 'null' : typeof v}, not a boolean`);
}

function compileLogical(kind: 'all' | 'any', items: CNode[], node: Node): CNode {
  const fns = items.map((i) => i.fn as (ctx: EvalContext) => boolean | Promise<boolean>);
  const async = items.some((i) => i.async);
  const stop = kind === 'any'; // the value that short-circuits
  const go = !stop;
  if (!async) {
    if (fns.length === 1) {
      const [a] = fns as [Fn];
      return {
        type: 'boolean',
        async,
        fn: (ctx) => {
          const x = a(ctx);
          return x === true || x === false ? x : notBoolean(x);
        },
        node,
      };
    }
    if (fns.length === 2) {
      const [a, b] = fns as [Fn, Fn];
      return {
        type: 'boolean',
        async,
        fn: (ctx) => {
          const x = a(ctx);
          if (x === stop) return stop;
          if (x !== go) notBoolean(x);
          const y = b(ctx);
          return y === stop || y === go ? y : notBoolean(y);
        },
        node,
      };
    }
    if (fns.length === 3) {
      const [a, b, c] = fns as [Fn, Fn, Fn];
      return {
        type: 'boolean',
        async,
        fn: (ctx) => {
          const x = a(ctx);
          if (x === stop) return stop;
          if (x !== go) notBoolean(x);
          const y = b(ctx);
          if (y === stop) return stop;
          if (y !== go) notBoolean(y);
          const z = c(ctx);
          return z === stop || z === go ? z : notBoolean(z);
        },
        node,
      };
    }
    const n = fns.length;
    return {
      type: 'boolean',
      async,
      fn: (ctx) => {
        for (let i = 0; i < n; i++) {
          const r = fns[i]!(ctx);
          if (r === stop) return stop;
          if (r !== go) notBoolean(r);
        }
        return go;
      },
      node,
    };
  }
  // Left to right with short-circuit, so a rate counter after a failed guard is never hit.
  const run = (ctx: EvalContext, from: number): boolean | Promise<boolean> => {
    for (let i = from; i < fns.length; i++) {
      const r = fns[i]!(ctx);
      if (isPromise(r)) return r.then((v) => (v === stop ? stop : v === go ? run(ctx, i + 1) : notBoolean(v)));
      if (r === stop) return stop;
      if (r !== go) notBoolean(r);
    }
    return go;
  };
  return { type: 'boolean', async, fn: (ctx) => run(ctx, 0), node };
}

const ORDER_OPS = new Set(['>', '>=', '<', '<=']);

function compileCompare(node: Extract<Node, { kind: 'compare' }>, env: CompileEnv, neg: boolean): CNode {
  const op = node.op;
  const l = compileNode(node.left, env);
  const r = op === 'matches' ? undefined : compileNode(node.right, env);
  const bool = (fn: Fn, async: boolean): CNode => ({ type: 'boolean', async, fn, node });

  if (op === 'matches') {
    if (l.literal && typeof l.literal.value !== 'string') problem(env, node.left, 'STEWARD_DSL_TYPE', `'matches' needs a string on the left, found ${l.type}`);
    if (node.right.kind !== 'literal' || typeof node.right.value !== 'string') {
      problem(env, node.right, 'STEWARD_DSL_TYPE', "'matches' needs a regex string literal on the right");
      return bool(() => false, false);
    }
    const re = compileRegex(node.right.value, env, node.right);
    if (!re) return bool(() => false, false);
    const g = l.fn;
    return l.async ? bool((ctx) => andThen(g(ctx), (v) => typeof v === 'string' && re.test(v)), true) : bool((ctx) => {
      const v = g(ctx);
      return typeof v === 'string' && re.test(v);
    }, false);
  }
  const right = r!;
  if (ORDER_OPS.has(op)) {
    for (const side of [l, right]) {
      if (side.type === 'boolean' || side.type === 'array') problem(env, side.node, 'STEWARD_DSL_TYPE', `'${op}' compares numbers or strings, not a ${side.type}`);
    }
    if (l.literal && right.literal && typeof l.literal.value !== typeof right.literal.value) {
      problem(env, node, 'STEWARD_DSL_TYPE', `'${op}' between a ${l.type} and a ${right.type} is never true`, node.opOffset);
    }
  }
  // A list (e.g. sql_tables_written()) against a scalar, or a scalar function result against a list
  // literal, is never equal: a load error at the operator (issue #28, typed fact signatures).
  if (op === '==' || op === '!=') {
    const kinds = [l.type, right.type];
    if (kinds.includes('array') && kinds.some((k) => k === 'string' || k === 'number' || k === 'boolean')) {
      problem(env, node, 'STEWARD_DSL_TYPE', `'${op}' between a ${l.type} and a ${right.type} is never true (use 'contains' to test a list for an element)`, node.opOffset);
    }
  }
  if (op === 'contains' && l.literal && typeof l.literal.value !== 'string' && !Array.isArray(l.literal.value)) {
    problem(env, node.left, 'STEWARD_DSL_TYPE', `'contains' needs a string or an array on the left, found ${l.type}`);
  }
  if (!l.async && !right.async && right.literal) {
    const p = node.left.kind === 'field' ? simplePath(node.left.segments) : undefined;
    const fused = p && fuseCompare(op, p, right.literal.value, neg);
    if (fused) return { type: 'boolean', async: false, fn: fused, node, negApplied: true };
    const special = specialise(op, l.fn, right.literal.value);
    if (special) return bool(special, false);
  }
  const cmp = comparator(op);
  const lf = l.fn;
  const rf = right.fn;
  if (!l.async && !right.async) return bool((ctx) => cmp(lf(ctx), rf(ctx)), false);
  return bool((ctx) => andThen(lf(ctx), (a) => andThen(rf(ctx), (b) => cmp(a, b))), true);
}

function comparator(op: string): (a: unknown, b: unknown) => boolean {
  switch (op) {
    case '==':
      return equals;
    case '!=':
      return notEquals;
    case 'contains':
      return contains;
    default:
      return (a, b) => ordered(op as '>', a, b);
  }
}

/** Hot shapes (`field <= 100000`, `field == "x"`, `field contains "DROP"`) get allocation-free closures. */
function specialise(op: string, g: Fn, k: unknown): Fn | undefined {
  if (typeof k === 'number') {
    switch (op) {
      case '>':
        return (ctx) => {
          const v = g(ctx);
          return typeof v === 'number' && v > k;
        };
      case '>=':
        return (ctx) => {
          const v = g(ctx);
          return typeof v === 'number' && v >= k;
        };
      case '<':
        return (ctx) => {
          const v = g(ctx);
          return typeof v === 'number' && v < k;
        };
      case '<=':
        return (ctx) => {
          const v = g(ctx);
          return typeof v === 'number' && v <= k;
        };
    }
  }
  if (typeof k === 'string' || typeof k === 'number' || typeof k === 'boolean') {
    if (op === '==') return (ctx) => g(ctx) === k;
    if (op === '!=') {
      return (ctx) => {
        const v = g(ctx);
        return v !== undefined && v !== null && v !== k;
      };
    }
  }
  if (typeof k === 'string' && op === 'contains') {
    return (ctx) => {
      const v = g(ctx);
      return typeof v === 'string' ? v.includes(k) : Array.isArray(v) && v.includes(k);
    };
  }
  return undefined;
}
