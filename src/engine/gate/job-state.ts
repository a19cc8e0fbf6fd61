/**
 * Per-job state of the finalization gate as plain JSON, its two pure reducers, and the in-memory store
 * `steward eval` uses (docs/gate.md "Job state"). The stream's Redis store implements the same
 * GateJobStore; the reducers are what make both agree. Attempts are counted per event id, so a
 * redelivered final answer keeps its attempt (spec-decisions D21).
 */
import type { GateAction, GateVerdict } from './codes.js';
import { advanceStepsDone } from './workflow.js';
import type { GateAgentKey, GateAgentState, GateAttempt, GateJobKey, GateJobState, GateJobStore, GateOutcome, GateToolCall, PackedOutcome } from './types.js';

export function emptyJobState(key: GateJobKey, nowMs: number): GateJobState {
  return { v: 1, job_id: key.jobId, tenant: key.tenant, agent_id: key.agentId, created_ms: nowMs, updated_ms: nowMs, attempt_count: 0, attempts: [], tool_calls: [], evidence_count: 0, rewrite_only: false, asked_user: false };
}

export function attemptOf(state: GateJobState | undefined, eventId: string): GateAttempt | undefined {
  return state?.attempts.find((a) => a.event_id === eventId);
}

/**
 * Reducer: a `tool_call` of the job was decided (`call.blocked`: it did not run). Idempotent per event id.
 * `workflows`: the step lists of the blueprint's tier-2 workflows, whose completed steps the state keeps beyond
 * the newest calls (`steps_done`).
 */
export function recordToolCall(prev: GateJobState | undefined, key: GateJobKey, call: GateToolCall, nowMs: number, maxKept: number, workflows: readonly (readonly string[])[] = []): GateJobState {
  const s = prev ?? emptyJobState(key, nowMs);
  if (s.tool_calls.some((c) => c.event_id === call.event_id)) return s;
  const tool_calls = [...s.tool_calls, call];
  // Before the window drops its oldest call: a state from before steps_done still has it to start from.
  const stepsDone = advanceStepsDone(s.steps_done, workflows, tool_calls, call);
  // The newest calls are kept; the count of ran calls stays exact (it is the evidence measure).
  if (tool_calls.length > maxKept) tool_calls.splice(0, tool_calls.length - maxKept);
  return { ...s, updated_ms: Math.max(s.updated_ms, nowMs), tool_calls, ...(stepsDone && { steps_done: stepsDone }), evidence_count: s.evidence_count + (call.blocked ? 0 : 1) };
}

export interface DecidedAttempt {
  event_id: string;
  ts_ms: number;
  abstraction_level: string | null;
  artifact_type: string | null;
  clarification: string | null;
  action: GateAction;
  verdict: GateVerdict | null;
  /** The decided outcome, compact (stored-outcome.ts). */
  o?: PackedOutcome;
  /** The whole outcome: only as states written before the compact form hold it (tests of such states). */
  outcome?: GateOutcome;
}

/**
 * Reducer: a final answer was decided. A second decision for the same event id (two instances racing on a
 * redelivery) keeps the first. `rewrite_only` holds from a rewrite directive until the next answer (§9.7).
 */
export function recordAttempt(prev: GateJobState | undefined, key: GateJobKey, d: DecidedAttempt, nowMs: number, maxKept: number): GateJobState {
  const s = prev ?? emptyJobState(key, nowMs);
  if (attemptOf(s, d.event_id)) return s;
  const attempt: GateAttempt = { ...d, index: s.attempt_count, evidence: s.evidence_count };
  const attempts = [...s.attempts, attempt];
  if (attempts.length > maxKept) attempts.splice(0, attempts.length - maxKept);
  return {
    ...s,
    updated_ms: Math.max(s.updated_ms, nowMs),
    attempt_count: s.attempt_count + 1,
    attempts,
    rewrite_only: d.action === 'rewrite',
    asked_user: s.asked_user || d.action === 'ask_user',
  };
}

/** In-memory GateJobStore (eval, tests). TTL on event time: a job idle for `ttlMs` of event time is forgotten. */
export class MemoryGateJobStore implements GateJobStore {
  private readonly jobs = new Map<string, GateJobState>();
  constructor(
    private readonly ttlMs = 24 * 3600_000,
    private readonly maxJobs = 100_000,
  ) {}

  private static k(key: GateJobKey): string {
    return JSON.stringify([key.tenant, key.agentId, key.jobId]);
  }

  async get(key: GateJobKey, nowMs: number): Promise<GateJobState | undefined> {
    return this.current(key, nowMs);
  }

  private current(key: GateJobKey, nowMs: number): GateJobState | undefined {
    const s = this.jobs.get(MemoryGateJobStore.k(key));
    if (s && s.updated_ms + this.ttlMs < nowMs) {
      this.jobs.delete(MemoryGateJobStore.k(key));
      return undefined;
    }
    return s === undefined ? undefined : structuredClone(s);
  }

  /** Read, fn and write in one synchronous step: atomic, as the interface promises (no other update in between). */
  async update(key: GateJobKey, nowMs: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState> {
    const next = fn(this.current(key, nowMs));
    const k = MemoryGateJobStore.k(key);
    this.jobs.delete(k);
    this.jobs.set(k, structuredClone(next));
    // Oldest-updated first: Map order is insertion order and every write re-inserts.
    if (this.jobs.size > this.maxJobs) this.jobs.delete(this.jobs.keys().next().value as string);
    return next;
  }

  get size(): number {
    return this.jobs.size;
  }

  private readonly agents = new Map<string, GateAgentState>();

  async getAgent(key: GateAgentKey, nowMs: number): Promise<GateAgentState | undefined> {
    return this.currentAgent(key, nowMs);
  }

  private currentAgent(key: GateAgentKey, nowMs: number): GateAgentState | undefined {
    const k = JSON.stringify([key.tenant, key.agentId]);
    const s = this.agents.get(k);
    if (s && s.updated_ms + this.ttlMs < nowMs) {
      this.agents.delete(k);
      return undefined;
    }
    return s === undefined ? undefined : structuredClone(s);
  }

  async updateAgent(key: GateAgentKey, nowMs: number, fn: (prev: GateAgentState | undefined) => GateAgentState): Promise<GateAgentState> {
    const next = fn(this.currentAgent(key, nowMs));
    const k = JSON.stringify([key.tenant, key.agentId]);
    this.agents.delete(k);
    this.agents.set(k, structuredClone(next));
    if (this.agents.size > this.maxJobs) this.agents.delete(this.agents.keys().next().value as string);
    return next;
  }
}
