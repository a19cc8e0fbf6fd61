/**
 * `when:` matchers (ACGP-1004 §6.1): every key must match the trace; a key may be a dotted path,
 * an array value means any-of, nested objects are paths too, equality is strict. Empty matches all.
 */
import type { Trace, WhenMatcher } from '../types.js';
import { intern, step } from './values.js';

const ALWAYS: WhenMatcher = () => true;

interface Clause {
  segments: string[];
  values: unknown[];
}

function flatten(when: Record<string, unknown>, prefix: string[], out: Clause[], depth: number): void {
  for (const [k, v] of Object.entries(when)) {
    const segments = [...prefix, ...k.split('.').map(intern)];
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && depth < 16) flatten(v as Record<string, unknown>, segments, out, depth + 1);
    else out.push({ segments, values: (Array.isArray(v) ? v : [v]).map((x: unknown) => (typeof x === 'string' && x.length <= 256 ? intern(x) : x)) });
  }
}

function getter(segments: string[]): (t: Trace) => unknown {
  if (segments.length === 1) {
    const a = segments[0]!;
    return (t) => (Object.prototype.hasOwnProperty.call(t, a) ? t[a] : undefined);
  }
  return (t) => {
    let v: unknown = t;
    for (let i = 0; i < segments.length && v !== undefined; i++) v = step(v, segments[i]!);
    return v;
  };
}

function clauseMatcher(c: Clause): WhenMatcher {
  const get = getter(c.segments);
  if (c.values.length === 1) {
    const x = c.values[0];
    return (t) => get(t) === x;
  }
  const set = new Set(c.values);
  return (t) => set.has(get(t));
}

export function compileWhen(when: Record<string, unknown> | undefined | null): WhenMatcher {
  if (!when || typeof when !== 'object') return ALWAYS;
  const clauses: Clause[] = [];
  flatten(when, [], clauses, 0);
  const ms = clauses.map(clauseMatcher);
  if (ms.length === 0) return ALWAYS;
  if (ms.length === 1) return ms[0]!;
  if (ms.length === 2) {
    const [a, b] = ms as [WhenMatcher, WhenMatcher];
    return (t) => a(t) && b(t);
  }
  return (t) => {
    for (let i = 0; i < ms.length; i++) if (!ms[i]!(t)) return false;
    return true;
  };
}
