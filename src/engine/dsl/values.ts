/**
 * Run-time value helpers shared by compiled closures: field getters (pre-split, specialised by
 * length), equality, ordering and text scanning. Every helper is total: odd input yields
 * undefined/false, never a throw.
 */
import type { EvalContext } from '../types.js';
import { StewardError } from '../../errors.js';

export type Getter = (ctx: EvalContext) => unknown;

// Names that exist on every object through its prototype; read them only as own properties.
const PROTO_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype).concat(Object.getOwnPropertyNames(Array.prototype), ['__proto__', 'prototype']));

export function step(v: unknown, seg: string | number): unknown {
  if (typeof v === 'object' && v !== null) {
    if (typeof seg === 'number') return Array.isArray(v) ? v[seg] : undefined;
    if (seg === 'length' && Array.isArray(v)) return v.length;
    return Object.prototype.hasOwnProperty.call(v, seg) ? (v as Record<string, unknown>)[seg] : undefined;
  }
  if (typeof v === 'string' && seg === 'length') return v.length;
  return undefined;
}

/** Root resolution (contracts C1): trust_debt and agent.* come from the engine, everything else from the trace. */
export function compileGetter(segments: readonly (string | number)[]): Getter {
  const [head, ...rest] = segments as [string, ...(string | number)[]];
  if (head === 'trust_debt' && rest.length === 0) return (ctx) => ctx.trustDebt;
  if (head === 'agent' && rest.length > 0) {
    // The registry's agent (tier, tenant, tools, domains) is trusted; a trace field named `agent` is not.
    return fromRoot((ctx) => ctx.agent, rest);
  }
  const safe = segments.every((s) => typeof s === 'string' && !PROTO_NAMES.has(s));
  if (safe && segments.length === 1) {
    const a = head;
    return (ctx) => ctx.trace[a];
  }
  if (safe && segments.length === 2) {
    const a = head;
    const b = rest[0] as string;
    return (ctx) => {
      const o = ctx.trace[a];
      return typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[b] : undefined;
    };
  }
  if (safe && segments.length === 3) {
    const a = head;
    const b = rest[0] as string;
    const c = rest[1] as string;
    return (ctx) => {
      const o = ctx.trace[a];
      if (typeof o !== 'object' || o === null) return undefined;
      const p = (o as Record<string, unknown>)[b];
      return typeof p === 'object' && p !== null ? (p as Record<string, unknown>)[c] : undefined;
    };
  }
  return fromRoot((ctx) => ctx.trace, segments);
}

function fromRoot(root: (ctx: EvalContext) => unknown, segs: readonly (string | number)[]): Getter {
  const path = segs.slice();
  return (ctx) => {
    let v = root(ctx);
    for (let i = 0; i < path.length && v !== undefined; i++) v = step(v, path[i]!);
    return v;
  };
}

/** Structural equality for JSON-like values; bounded so hostile nesting cannot blow the stack. */
export function deepEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (depth > 32 || typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i], depth + 1)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth + 1)) return false;
  }
  return true;
}

/** null and undefined are both "missing": every comparison with a missing side is false. */
export function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

export function equals(a: unknown, b: unknown): boolean {
  return present(a) && present(b) && (a === b || deepEqual(a, b));
}

export function notEquals(a: unknown, b: unknown): boolean {
  return present(a) && present(b) && !(a === b || deepEqual(a, b));
}

/** Ordering is defined for two numbers or two strings; anything else is false. */
export function ordered(op: '>' | '>=' | '<' | '<=', a: unknown, b: unknown): boolean {
  const ta = typeof a;
  if ((ta !== 'number' && ta !== 'string') || ta !== typeof b) return false;
  const x = a as number;
  const y = b as number;
  switch (op) {
    case '>':
      return x > y;
    case '>=':
      return x >= y;
    case '<':
      return x < y;
    default:
      return x <= y;
  }
}

export function contains(a: unknown, b: unknown): boolean {
  if (typeof a === 'string') return typeof b === 'string' && a.includes(b);
  if (Array.isArray(a) && present(b)) {
    for (const x of a) if (x === b || deepEqual(x, b)) return true;
  }
  return false;
}

export const MAX_SCAN_ITEMS = 10_000;
export const MAX_SCAN_DEPTH = 32;

/**
 * Applies `pred` to the text of a value: strings and numbers directly, objects and arrays through
 * their string leaves, so contains_entity(args, "ssn") sees nested fields. The walk is bounded (depth and
 * count); a value it cannot finish without a match cannot be evaluated, and the condition fails closed
 * (STEWARD_DSL_EVAL) — a "no" for content hidden below the limits would let it through.
 */
export function someText(v: unknown, pred: (s: string) => boolean): boolean {
  if (typeof v === 'string') return pred(v);
  if (typeof v === 'number') return Number.isFinite(v) && pred(String(v));
  if (typeof v !== 'object' || v === null) return false;
  const stack: { v: unknown; d: number }[] = [{ v, d: 0 }];
  let seen = 0;
  while (stack.length > 0) {
    if (seen >= MAX_SCAN_ITEMS) throw new StewardError('STEWARD_DSL_EVAL', `text scan cut off after ${MAX_SCAN_ITEMS} values: cannot evaluate`);
    const { v: cur, d } = stack.pop()!;
    seen++;
    if (typeof cur === 'string') {
      if (pred(cur)) return true;
    } else if (typeof cur === 'number') {
      if (Number.isFinite(cur) && pred(String(cur))) return true;
    } else if (typeof cur === 'object' && cur !== null) {
      const vals = Array.isArray(cur) ? cur : Object.values(cur);
      if (vals.length === 0) continue;
      if (d >= MAX_SCAN_DEPTH) throw new StewardError('STEWARD_DSL_EVAL', `text scan cut off at depth ${MAX_SCAN_DEPTH}: cannot evaluate`);
      for (let i = vals.length - 1; i >= 0; i--) stack.push({ v: vals[i], d: d + 1 });
    }
  }
  return false;
}

export function isPromise(v: unknown): v is Promise<unknown> {
  return v instanceof Promise;
}

/** A trace-root path of one or two plain names, eligible for fused closures (see fused.ts). */
export function simplePath(segments: readonly (string | number)[]): { a: string; b?: string } | undefined {
  if (segments.length < 1 || segments.length > 2) return undefined;
  if (!segments.every((s) => typeof s === 'string' && !PROTO_NAMES.has(s))) return undefined;
  const [a, b] = segments as string[];
  if (b === undefined && a === 'trust_debt') return undefined;
  if (b !== undefined && a === 'agent') return undefined;
  return b === undefined ? { a: a! } : { a: a!, b };
}

/**
 * Returns the internalised copy of a string. Names sliced out of an expression are not internalised,
 * and V8 then hashes them on every keyed property load (a 3x slowdown on field access).
 */
export function intern(s: string): string {
  return Object.keys({ [s]: 0 })[0]!;
}
