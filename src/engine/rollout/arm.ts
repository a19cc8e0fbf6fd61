/**
 * Staged rollout arms (ACGP-1004 §13.5.1; docs/rollout.md, spec-decisions D25). An agent's arm is a pure
 * function of the blueprint name, its agent id and the canary percentage: every instance and every restart
 * computes the same arm, and raising the percentage only ever moves agents from stable to canary (an agent's
 * bucket is fixed; the canary is the buckets below the percentage).
 */
import { splitId } from '../blueprint/versions.js';
import type { BlueprintSet } from '../blueprint/select.js';
import type { AgentInfo, CompiledBlueprint, Trace } from '../types.js';

export type RolloutArm = 'stable' | 'canary';

/** One blueprint name's rollout, as the shared state holds it. */
export interface RolloutState {
  /** Blueprint name without version (`finance/trading`). */
  name: string;
  stableVersion: string;
  canaryVersion: string;
  /** 0..100; 0 after a rollback. */
  percent: number;
  /** Bumped on every change: counters and rollbacks are per generation (a rollback of an older one is void). */
  generation: number;
  updatedAtMs: number;
  /** Why it last changed (`set by ops`, `rollback: halt_rate > 1%`). */
  reason?: string;
}

/** Rollouts by blueprint name. */
export type RolloutTable = ReadonlyMap<string, RolloutState>;

/** Buckets per 100 %: percentages have two decimals. */
export const BUCKETS = 10_000;

/** FNV-1a (32 bit) of `name\0agentId`: stable across processes and Node versions, cheap, well spread. */
export function rolloutBucket(name: string, agentId: string): number {
  let h = 0x811c9dc5;
  const s = `${name}\u0000${agentId}`;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % BUCKETS;
}

export function armOf(state: Pick<RolloutState, 'name' | 'percent'>, agentId: string): RolloutArm {
  return rolloutBucket(state.name, agentId) < Math.round(state.percent * (BUCKETS / 100)) ? 'canary' : 'stable';
}

export interface RolloutSelection {
  blueprint: CompiledBlueprint;
  arm?: RolloutArm;
}

/**
 * The set's selection, then the rollout of the chosen name: the agent's arm picks the stable or the canary
 * version. A version missing from the set (not loaded, or rejected) leaves the set's choice and no arm.
 */
export function selectWithRollout(set: BlueprintSet, agent: AgentInfo, trace: Trace, rollouts: RolloutTable | undefined): RolloutSelection {
  const chosen = set.select(agent, trace);
  if (!rollouts || rollouts.size === 0) return { blueprint: chosen };
  const r = rollouts.get(splitId(chosen.id).name);
  if (!r) return { blueprint: chosen };
  const arm = armOf(r, agent.id);
  const version = arm === 'canary' ? r.canaryVersion : r.stableVersion;
  if (chosen.version === version) return { blueprint: chosen, arm };
  const bp = byNameVersion(set).get(`${r.name}@${version}`);
  return bp ? { blueprint: bp, arm } : { blueprint: chosen };
}

const INDEX = new WeakMap<BlueprintSet, Map<string, CompiledBlueprint>>();

/** `name@version` → blueprint, built once per (immutable) set. */
function byNameVersion(set: BlueprintSet): Map<string, CompiledBlueprint> {
  let m = INDEX.get(set);
  if (!m) {
    m = new Map(set.blueprints.map((b) => [`${splitId(b.id).name}@${b.version}`, b]));
    INDEX.set(set, m);
  }
  return m;
}
