/**
 * Inheritance of `finalization_gate:` (docs/gate.md "Inheritance"). Scalars: the child wins. Safety lists
 * (`safety_patterns`, `keyword_blocklist`) and `custom_reason_codes` append, parent first: like checks and
 * tripwires, a child must not silently drop a parent's safety pattern. `intents` and `skills` merge by key,
 * each skill override with the same rules. `guardrails:` append like checks (blueprint/merge.ts).
 */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const APPENDED = ['safety_patterns', 'keyword_blocklist', 'custom_reason_codes'] as const;

export function mergeSettings(parent: Obj, child: Obj): Obj {
  const out: Obj = { ...parent, ...child };
  for (const k of APPENDED) {
    const a = Array.isArray(parent[k]) ? (parent[k] as unknown[]) : [];
    const b = Array.isArray(child[k]) ? (child[k] as unknown[]) : [];
    if (parent[k] !== undefined || child[k] !== undefined) out[k] = [...a, ...b];
  }
  if (isObj(parent.intents) || isObj(child.intents)) out.intents = { ...(isObj(parent.intents) ? parent.intents : {}), ...(isObj(child.intents) ? child.intents : {}) };
  return out;
}

export function mergeFinalizationGate(parent: unknown, child: unknown): unknown {
  if (child === undefined) return parent;
  if (!isObj(parent) || !isObj(child)) return child;
  const out = mergeSettings(parent, child);
  if (isObj(parent.skills) || isObj(child.skills)) {
    const skills: Obj = { ...(isObj(parent.skills) ? parent.skills : {}) };
    for (const [id, o] of Object.entries(isObj(child.skills) ? child.skills : {})) skills[id] = isObj(skills[id]) && isObj(o) ? mergeSettings(skills[id] as Obj, o) : o;
    out.skills = skills;
  }
  return out;
}
