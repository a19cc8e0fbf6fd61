/**
 * Fused leaf closures for the hottest shapes. A closure compiler shares one function literal (and so
 * one inline cache and call-feedback slot) across every condition; each call boundary between leaf
 * closures becomes a megamorphic call. Fusing "trace field OP literal" (with an optional negation)
 * into one closure per shape removes those boundaries: the getter, the operator and NOT are one call.
 * Semantics are exactly those of values.ts (missing → false before negation).
 */
import type { EvalContext } from '../types.js';
import type { Fn } from './compile-types.js';

type Obj = Record<string, unknown>;

/** Trace-root paths of 1 or 2 plain names (no indexes, no prototype names, not trust_debt/agent.*). */
export interface SimplePath {
  a: string;
  b?: string;
}

// Used only off the hottest paths; hot closures inline the load so each literal owns its inline cache.
const at1 = (ctx: EvalContext, a: string): unknown => ctx.trace[a];
const at2 = (ctx: EvalContext, a: string, b: string): unknown => {
  const o = ctx.trace[a];
  return typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
};

export function fuseCompare(op: string, p: SimplePath, k: unknown, neg: boolean): Fn | undefined {
  const { a, b } = p;
  if (typeof k === 'number') {
    switch (op) {
      case '<=':
        return b === undefined
          ? (ctx) => {
              const v = ctx.trace[a];
              return (typeof v === 'number' && v <= k) !== neg;
            }
          : (ctx) => {
              const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
              return (typeof v === 'number' && v <= k) !== neg;
            };
      case '<':
        return b === undefined
          ? (ctx) => {
              const v = ctx.trace[a];
              return (typeof v === 'number' && v < k) !== neg;
            }
          : (ctx) => {
              const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
              return (typeof v === 'number' && v < k) !== neg;
            };
      case '>=':
        return b === undefined
          ? (ctx) => {
              const v = ctx.trace[a];
              return (typeof v === 'number' && v >= k) !== neg;
            }
          : (ctx) => {
              const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
              return (typeof v === 'number' && v >= k) !== neg;
            };
      case '>':
        return b === undefined
          ? (ctx) => {
              const v = ctx.trace[a];
              return (typeof v === 'number' && v > k) !== neg;
            }
          : (ctx) => {
              const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
              return (typeof v === 'number' && v > k) !== neg;
            };
    }
  }
  if (typeof k === 'string' || typeof k === 'number' || typeof k === 'boolean') {
    if (op === '==') return b === undefined ? (ctx) => (ctx.trace[a] === k) !== neg : (ctx) => {
            const o = ctx.trace[a];
            return (typeof o === 'object' && o !== null && (o as Obj)[b] === k) !== neg;
          };
    if (op === '!=') {
      return b === undefined
        ? (ctx) => {
            const v = ctx.trace[a];
            return (v !== undefined && v !== null && v !== k) !== neg;
          }
        : (ctx) => {
            const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
            return (v !== undefined && v !== null && v !== k) !== neg;
          };
    }
  }
  if (typeof k === 'string' && op === 'contains') return fuseContainsAny(p, [k], neg);
  return undefined;
}

/** `any: [f contains "x", f contains "y", ...]` on one field: read it once, test each literal. */
export function fuseContainsAny(p: SimplePath, ks: string[], neg: boolean): Fn {
  const { a, b } = p;
  const n = ks.length;
  const test = (v: unknown): boolean => {
    if (typeof v === 'string') {
      for (let i = 0; i < n; i++) if (v.includes(ks[i]!)) return true;
      return false;
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < n; i++) if (v.includes(ks[i])) return true;
    }
    return false;
  };
  if (n === 1) {
    const k = ks[0]!;
    return b === undefined
      ? (ctx) => {
          const v = ctx.trace[a];
          return (typeof v === 'string' ? v.includes(k) : Array.isArray(v) && v.includes(k)) !== neg;
        }
      : (ctx) => {
          const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
          return (typeof v === 'string' ? v.includes(k) : Array.isArray(v) && v.includes(k)) !== neg;
        };
  }
  if (n === 3 && b !== undefined) {
    // The §9.4.5 shape (three keywords on one nested field), unrolled.
    const [k0, k1, k2] = ks as [string, string, string];
    return (ctx) => {
      const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
      if (typeof v === 'string') return (v.includes(k0) || v.includes(k1) || v.includes(k2)) !== neg;
      return test(v) !== neg;
    };
  }
  return b === undefined ? (ctx) => test(at1(ctx, a)) !== neg : (ctx) => test(at2(ctx, a, b)) !== neg;
}

/** `any: [f == "x", f == "y"]` on one field: one Set lookup. */
export function fuseEqualsAny(p: SimplePath, ks: (string | number | boolean)[], neg: boolean): Fn {
  const { a, b } = p;
  const set = new Set<unknown>(ks);
  return b === undefined ? (ctx) => set.has(at1(ctx, a)) !== neg : (ctx) => set.has(at2(ctx, a, b)) !== neg;
}

/** A one-argument predicate on a simple path, negation folded in. */
export function fusePredicate(p: SimplePath, f: (v: unknown) => boolean, neg: boolean): Fn {
  const { a, b } = p;
  return b === undefined ? (ctx) => f(at1(ctx, a)) !== neg : (ctx) => f(at2(ctx, a, b)) !== neg;
}

/** in_allowlist / in_denylist on a simple path: exact Set hit first, the general matcher otherwise. */
export function fuseInList(p: SimplePath, list: { exact: ReadonlySet<string>; has(v: unknown): boolean }, allow: boolean, neg: boolean): Fn {
  const { a, b } = p;
  const exact = list.exact;
  // An array value is allowed when every element is allowed, denied when any element is denied.
  const slow = (v: unknown): boolean => (Array.isArray(v) ? (allow ? v.length > 0 && v.every((x) => list.has(x)) : v.some((x) => list.has(x))) : list.has(v));
  return b === undefined
    ? (ctx) => {
        const v = ctx.trace[a];
        return (typeof v === 'string' && exact.has(v) ? true : v === undefined ? false : slow(v)) !== neg;
      }
    : (ctx) => {
        const o = ctx.trace[a];
              const v = typeof o === 'object' && o !== null ? (o as Obj)[b] : undefined;
        return (typeof v === 'string' && exact.has(v) ? true : v === undefined ? false : slow(v)) !== neg;
      };
}
