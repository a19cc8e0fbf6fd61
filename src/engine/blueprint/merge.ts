/**
 * Inheritance merge (ACGP-1004 §5): how a child's authored fields combine with its resolved parent.
 * Documented per field in docs/blueprints.md; keep the two in sync.
 */
import { mergeFinalizationGate } from '../gate/merge-config.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Never inherited: they describe this file/version only. */
export const OWN_ONLY = ['$schema', 'id', 'version', 'description', 'inherits', 'metadata', 'migration', 'rollback', 'compatibility'] as const;
/** Appended, parent first (§5: "checks is APPENDED"; tripwires and gate guardrails likewise). */
export const APPENDED = ['checks', 'tripwires', 'guardrails'] as const;
/** Replaced as a whole by the child when present (each is only meaningful as a consistent set). */
export const REPLACED = ['scope', 'evidence', 'scoring', 'calibration'] as const;
/** Merged key by key, child wins: lists (by name), governance (by key). */
export const SHALLOW_MERGED = ['lists', 'governance'] as const;
/** Deep-merged, child wins at every leaf: trust_debt. ctq: metrics merged by name, other ctq keys replaced. */
export const DEEP_MERGED = ['trust_debt'] as const;

export function deepMerge(parent: unknown, child: unknown): unknown {
  if (child === undefined) return parent;
  if (!isObj(parent) || !isObj(child)) return child;
  const out: Obj = { ...parent };
  for (const [k, v] of Object.entries(child)) out[k] = deepMerge(parent[k], v);
  return out;
}

function mergeCtq(parent: unknown, child: unknown): unknown {
  if (child === undefined) return parent;
  if (!isObj(parent) || !isObj(child)) return child;
  const out: Obj = { ...parent, ...child };
  if (isObj(parent.metrics) || isObj(child.metrics)) out.metrics = { ...(isObj(parent.metrics) ? parent.metrics : {}), ...(isObj(child.metrics) ? child.metrics : {}) };
  return out;
}

/** `parentResolved` undefined for the root. `parentKey` is recorded as the resolved `inherits`. */
export function mergeAuthored(parentResolved: Obj | undefined, own: Obj, parentKey: string | undefined): Obj {
  const out: Obj = {};
  out.id = own.id;
  out.version = own.version;
  out.description = own.description;
  if (parentKey) out.inherits = parentKey;
  for (const k of ['$schema', 'metadata', 'migration', 'rollback', 'compatibility']) if (own[k] !== undefined) out[k] = own[k];
  for (const [k, v] of Object.entries(own)) if (k.startsWith('x-')) out[k] = v;
  const p = parentResolved ?? {};
  for (const k of REPLACED) {
    const v = own[k] ?? p[k];
    if (v !== undefined) out[k] = v;
  }
  for (const k of APPENDED) {
    const a = Array.isArray(p[k]) ? (p[k] as unknown[]) : [];
    const b = Array.isArray(own[k]) ? (own[k] as unknown[]) : [];
    if (p[k] !== undefined || own[k] !== undefined) out[k] = [...a, ...b];
  }
  for (const k of SHALLOW_MERGED) {
    if (p[k] !== undefined || own[k] !== undefined) out[k] = { ...(isObj(p[k]) ? p[k] : {}), ...(isObj(own[k]) ? own[k] : {}) };
  }
  for (const k of DEEP_MERGED) {
    const v = deepMerge(p[k], own[k]);
    if (v !== undefined) out[k] = v;
  }
  const ctq = mergeCtq(p.ctq, own.ctq);
  if (ctq !== undefined) out.ctq = ctq;
  const gate = mergeFinalizationGate(p.finalization_gate, own.finalization_gate);
  if (gate !== undefined) out.finalization_gate = gate;
  return out;
}
