/**
 * BlueprintSet: lookup by reference and per-event selection (ACGP-1004 §1, §4; contracts C2).
 *
 * Selection uses only the trusted registry's AgentInfo (tier, tools, domains), never trace content.
 * A blueprint matches when every scope dimension it declares matches: agent_tier contains the agent's
 * tier; tools / domains intersect the agent's registered tools / domains. Unregistered agents match only
 * global blueprints (no scope). A newer matching version of a name supersedes the older ones (a release
 * before a pre-release, then the higher version): older versions stay available to `inherits` pins, but
 * rolling out 2.0 beside 1.0 with the same scope must not leave agents on 1.0 because 1.0 happens to have
 * a longer inheritance chain. Precedence among the remaining matches:
 *   1. more scope dimensions declared (more specific) first;
 *   2. longer inheritance chain (a specialisation of another blueprint) first;
 *   3. higher version first; 4. id, then key, ascending.
 * The clarity baseline is the last resort. The per-tier candidate lists are precomputed at compile time
 * and results are cached per AgentInfo object, so the per-event cost is a WeakMap lookup.
 */
import { StewardError } from '../../errors.js';
import type { AclTier, AgentInfo, CompiledBlueprint, Trace } from '../types.js';
import { compareVersions, isPrerelease, keyOf, parseRef, resolveVersion, splitId } from './versions.js';

export interface BlueprintSet {
  blueprints: CompiledBlueprint[];
  get(ref: string): CompiledBlueprint | undefined;
  select(agent: AgentInfo, trace: Trace): CompiledBlueprint;
}

const TIERS: AclTier[] = ['ACL-0', 'ACL-1', 'ACL-2', 'ACL-3', 'ACL-4', 'ACL-5'];
export const BASELINE_NAME = 'clarity.baseline';

function specificity(bp: CompiledBlueprint): number {
  const s = bp.scope;
  return (s.agentTier ? 1 : 0) + (s.tools ? 1 : 0) + (s.domains ? 1 : 0);
}

export function precedence(a: CompiledBlueprint, b: CompiledBlueprint): number {
  return (
    specificity(b) - specificity(a) ||
    b.chain.length - a.chain.length ||
    compareVersions(b.version, a.version) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) ||
    (a.file ?? '').localeCompare(b.file ?? '')
  );
}

/** True when `a` should supersede `b` for selection: a release beats a pre-release, then SemVer order. */
function newerRelease(a: string, b: string): boolean {
  const ra = !isPrerelease(a);
  const rb = !isPrerelease(b);
  return ra !== rb ? ra : compareVersions(a, b) > 0;
}

const intersects = (want: string[] | undefined, have: readonly string[]): boolean => !want || want.some((w) => have.includes(w));

export function scopeMatches(bp: CompiledBlueprint, agent: AgentInfo): boolean {
  const s = bp.scope;
  if (!agent.registered) return specificity(bp) === 0;
  if (s.agentTier && !s.agentTier.includes(agent.tier)) return false;
  return intersects(s.tools, agent.tools) && intersects(s.domains, agent.domains);
}

export function createBlueprintSet(blueprints: CompiledBlueprint[]): BlueprintSet {
  const byName = new Map<string, Map<string, CompiledBlueprint>>();
  for (const bp of blueprints) {
    const name = splitId(bp.id).name;
    if (!byName.has(name)) byName.set(name, new Map());
    byName.get(name)!.set(bp.version, bp);
  }
  const get = (ref: string): CompiledBlueprint | undefined => {
    const r = parseRef(ref);
    const versions = r && byName.get(r.name);
    if (!r || !versions) return undefined;
    const v = resolveVersion(r, [...versions.keys()]);
    return v === undefined ? undefined : versions.get(v);
  };
  const names = new Map(blueprints.map((bp) => [bp, splitId(bp.id).name]));
  const nameOf = (bp: CompiledBlueprint): string => names.get(bp) ?? splitId(bp.id).name;
  const sorted = [...blueprints].sort(precedence);
  const byTier = new Map<AclTier, CompiledBlueprint[]>(TIERS.map((t) => [t, sorted.filter((bp) => !bp.scope.agentTier || bp.scope.agentTier.includes(t))]));
  const globals = sorted.filter((bp) => specificity(bp) === 0 && splitId(bp.id).name !== BASELINE_NAME);
  const baseline = get(`${BASELINE_NAME}@1.0`) ?? get(BASELINE_NAME);
  const cache = new WeakMap<AgentInfo, CompiledBlueprint>();

  const select = (agent: AgentInfo, _trace: Trace): CompiledBlueprint => {
    const hit = cache.get(agent);
    if (hit) return hit;
    let chosen: CompiledBlueprint | undefined;
    const list = agent.registered ? (byTier.get(agent.tier) ?? sorted).filter((bp) => nameOf(bp) !== BASELINE_NAME && scopeMatches(bp, agent)) : globals;
    const newest = new Map<string, CompiledBlueprint>();
    for (const bp of list) {
      const have = newest.get(nameOf(bp));
      if (!have || newerRelease(bp.version, have.version)) newest.set(nameOf(bp), bp);
    }
    for (const bp of list) if (newest.get(nameOf(bp)) === bp) { chosen = bp; break; }
    chosen ??= baseline;
    if (!chosen) throw new StewardError('STEWARD_INTERNAL', 'blueprint set has no clarity baseline to fall back to');
    cache.set(agent, chosen);
    return chosen;
  };
  return { blueprints: sorted, get, select };
}

export { keyOf };
