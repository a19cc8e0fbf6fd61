/**
 * The agent's jobs in rewrite-only state (spec-decisions D45, docs/gate.md "Tool calls"). Job state is keyed by
 * job, so a `tool_call` without `job_id` named no state to check: a job told to rewrite without tools (§9.7) could
 * still call them by leaving `job_id` out. The gate keeps, per agent, the jobs a rewrite directive put in that state
 * (job id → event time of the directive), and blocks the agent's job-less tool calls while one of them still is.
 *
 * The index is a hint, the job states are the truth: it is written after the job's state (added on a rewrite,
 * removed at the job's next answer) and every listed job is read back before a call is blocked, so an entry left
 * behind by a crash between the two writes, or by a job that expired, blocks nothing. A redelivered rewrite
 * writes its entry again (the crash case the other way round).
 */
import type { GateAgentKey, GateAgentState, GateJobKey, GateJobState, GateJobStore } from './types.js';

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

/** The agent's jobs in rewrite-only state now: the index's jobs whose own state confirms it (read together). */
export async function rewriteOnlyJobs(store: GateJobStore, agent: GateAgentKey, nowMs: number): Promise<string[]> {
  const listed = Object.keys((await store.getAgent(agent, nowMs))?.rewrite_only ?? {});
  if (listed.length === 0) return [];
  const states = await Promise.all(listed.map((jobId) => store.get({ ...agent, jobId }, nowMs)));
  return listed.filter((_, i) => states[i]?.rewrite_only === true);
}
