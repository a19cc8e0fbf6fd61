/**
 * The agent's jobs in rewrite-only state (spec-decisions D45, docs/gate.md "Tool calls"). Job state is keyed by
 * job, so a `tool_call` without `job_id` named no state to check: a job told to rewrite without tools (§9.7) could
 * still call them by leaving `job_id` out. The gate keeps, per agent, the jobs a rewrite directive put in that state
 * (job id → event time of the directive), and blocks the agent's job-less tool calls while one of them still is —
 * for a short while after its directive only (`rewriteOnlyHoldMs`): a rewrite is answered within minutes, and a
 * job the user abandoned would otherwise hold every job-less call of the agent until its state expires (a day).
 *
 * The index is a hint, the job states are the truth: it is written after the job's state (added on a rewrite,
 * removed at the job's next answer) and every listed job is read back before a call is blocked, so an entry left
 * behind by a crash between the two writes, or by a job that expired, blocks nothing. A redelivered rewrite
 * writes its entry again (the crash case the other way round).
 */
import type { CompiledGate, GateAgentKey, GateAgentState, GateJobKey, GateJobState, GateJobStore } from './types.js';

/** Jobs an agent's index lists at most; past it the oldest entries go (docs/gate.md). */
export const MAX_REWRITE_ONLY_JOBS = 64;
/** An entry older than this (the job store's default TTL) names a job that expired: dropped at the next write. */
const ENTRY_MAX_AGE_MS = 24 * 3_600_000;

const agentOf = (k: GateJobKey): GateAgentKey => ({ tenant: k.tenant, agentId: k.agentId });

/** Reducer: the index with `jobId` listed from `sinceMs` (or removed when null). Pure; unchanged input → same entries. */
export function setRewriteOnly(prev: GateAgentState | undefined, jobId: string, sinceMs: number | null, nowMs: number, maxJobs = MAX_REWRITE_ONLY_JOBS): GateAgentState {
  const entries = Object.entries(prev?.rewrite_only ?? {}).filter(([j, t]) => j !== jobId && t >= nowMs - ENTRY_MAX_AGE_MS);
  if (sinceMs !== null) entries.push([jobId, sinceMs]);
  entries.sort((a, b) => a[1] - b[1]);
  if (entries.length > maxJobs) entries.splice(0, entries.length - maxJobs);
  return { v: 1, updated_ms: Math.max(prev?.updated_ms ?? 0, nowMs), rewrite_only: Object.fromEntries(entries) };
}

/**
 * After an answer of the job was recorded (`after`: the state as saved; `before`: as the decision read it), the
 * index in step with it. Writes only when the job is or was rewrite-only — the common answer costs nothing.
 */
export async function syncRewriteIndex(store: GateJobStore, key: GateJobKey, nowMs: number, before: GateJobState | undefined, after: GateJobState | undefined): Promise<void> {
  const on = after?.rewrite_only === true;
  if (!on && before?.rewrite_only !== true) return;
  await store.updateAgent(agentOf(key), nowMs, (prev) => setRewriteOnly(prev, key.jobId, on ? nowMs : null, nowMs));
}

/**
 * The agent's jobs that hold its job-less tool calls now: the index's jobs listed within the last `holdMs` (the
 * directive's event time; a job's own named calls stay held by its state for as long as it lasts) whose own state
 * confirms rewrite-only (read together).
 */
export async function rewriteOnlyJobs(store: GateJobStore, agent: GateAgentKey, nowMs: number, holdMs: number): Promise<string[]> {
  const index = (await store.getAgent(agent, nowMs))?.rewrite_only ?? {};
  const listed = Object.keys(index).filter((jobId) => index[jobId]! >= nowMs - holdMs);
  if (listed.length === 0) return [];
  const states = await Promise.all(listed.map((jobId) => store.get({ ...agent, jobId }, nowMs)));
  return listed.filter((_, i) => states[i]?.rewrite_only === true);
}

/** Per compiled gate: whether its base settings enable the judge, and the skills whose own settings do. */
const judgeSkills = new WeakMap<CompiledGate, { base: boolean; skills: ReadonlySet<string> }>();

/**
 * Whether a judge can apply to some job of an agent the registry lists for `skills` under `gate` — only then can
 * the agent have a rewrite-only job to look up. A job's settings are the base's (no skill applies) or its skills'
 * (registry skills only, the strictest: a judge when any asks for one; a skill without settings of its own has the
 * base's), so: the base enables the judge, or a listed skill's settings do. The skills with a judge are found once
 * per compiled gate; the agent's list is then a few set lookups (cheaper than a cache key made of the list).
 */
export function judgeCanApply(gate: CompiledGate, skills: readonly string[] | undefined): boolean {
  let j = judgeSkills.get(gate);
  if (!j) judgeSkills.set(gate, (j = { base: gate.settings.enabled, skills: new Set(Object.keys(gate.skills).filter((s) => gate.skills[s]!.enabled)) }));
  return j.base || (skills ?? []).some((s) => j.skills.has(s));
}
