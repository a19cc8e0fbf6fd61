/**
 * The run-governance step of a stream stage in one call (docs/acm.md "Stage contract"). The stage
 * provides where run and context states live (AcmStateStore: Redis, ClickHouse, memory) and the
 * blueprint decision; this returns what to answer, what to append to the ledger and what to record.
 * Ordering: a run's events arrive in order when the run has one agent (partition key agent_id); the
 * store must apply a tenant's context update atomically (versions are per context id, monotonic).
 */
import { acmPolicyDecisionDraft } from '../ledger/acm-entries.js';
import type { LedgerDraft } from '../ledger/types.js';
import { isApproved, mostSevere, severityRank, type Intervention, type Trace } from '../types.js';
import { emptyContextState, type ContextState, type ContextVersion } from './context.js';
import { taskPolicyInput, type TaskPolicyInput } from './pdp.js';
import type { AcmProblem } from './problems.js';
import { isAcmHook, runIdOf, type AcmEnv, type RunState } from './run-state.js';
import { checkAcmEvent, commitAcmEvent, type AcmCheck } from './run-step.js';

export interface AcmStateStore {
  loadRun(runId: string): Promise<RunState | undefined>;
  loadContexts(tenant: string): Promise<ContextState>;
  /** Persists the outcome of one event: the run's new state, the tenant's contexts, a new context version. */
  save(u: { tenant: string; run?: RunState; contexts?: ContextState; context?: ContextVersion }): Promise<void>;
}

/** The blueprint's answer for the trace (the stage's StewardEngine.decide/score). */
export interface BlueprintAnswer {
  blueprint: string;
  intervention: Intervention;
  stage?: string;
  reasons?: string[];
  tripwires?: { id: string; fired: boolean }[];
  rules?: { id: string; passed: boolean }[];
}

export type AcmStageOutcome =
  | { kind: 'not_governed' }
  /** Invalid input: dead-letter it with these problems (nothing was changed). */
  | { kind: 'rejected'; check: AcmCheck; problems: AcmProblem[] }
  | {
      kind: 'decided';
      check?: AcmCheck;
      /** The answer: the most severe of the blueprint's and the ACM checks'. */
      intervention: Intervention;
      approved: boolean;
      /** Ledger drafts in order: POLICY_DECISION, then the ACM entries of the event. */
      drafts: LedgerDraft[];
      /** §14.1 input of a task hook (for the PDP request record). */
      input?: TaskPolicyInput;
    };

/**
 * Governs one trace. `decide` is called only for a valid event; the digests (request/response lines,
 * policy files) are the stage's to pass when it records PDP records (docs/acm.md "Replay bundles").
 */
export async function governAcmEvent(
  store: AcmStateStore,
  trace: Trace,
  o: { env: AcmEnv; tenant: string; nowMs: number; engineVersion?: string; digests?: { request?: string; response?: string; policy?: string } },
  decide: () => Promise<BlueprintAnswer>,
): Promise<AcmStageOutcome> {
  const runId = runIdOf(trace);
  if (!isAcmHook(trace.hook) && runId === undefined) return { kind: 'not_governed' };
  const run = runId !== undefined ? await store.loadRun(runId) : undefined;
  const contexts = isAcmHook(trace.hook) ? await store.loadContexts(o.tenant) : emptyContextState();
  const check = isAcmHook(trace.hook) ? checkAcmEvent({ run, contexts }, trace, o.env) : undefined;
  if (check?.rejected) return { kind: 'rejected', check, problems: check.problems };
  const answer = await decide();
  const intervention = check ? mostSevere(answer.intervention, check.intervention) : answer.intervention;
  const approved = isApproved(intervention);
  const drafts: LedgerDraft[] = runId === undefined ? [] : [runPolicyDecisionDraft(trace, runId, o, answer, intervention, approved, check, o.digests)];
  if (check) {
    const c = commitAcmEvent({ run, contexts }, trace, check, { decision: { intervention, approved }, nowMs: o.nowMs, tenant: o.tenant }, o.env);
    drafts.push(...c.drafts);
    await store.save({ tenant: o.tenant, run: c.run, ...(c.contexts !== contexts ? { contexts: c.contexts } : {}), ...(c.context ? { context: c.context } : {}) });
  } else if (run) {
    await store.save({ tenant: o.tenant, run: { ...run, events: run.events + 1 } });
  }
  const input = taskPolicyInput(trace);
  return { kind: 'decided', ...(check ? { check } : {}), intervention, approved, drafts, ...(input ? { input } : {}) };
}

/** In-memory AcmStateStore (tests, single-process tools). */
export class MemoryAcmStateStore implements AcmStateStore {
  readonly runs = new Map<string, RunState>();
  readonly contexts = new Map<string, ContextState>();
  readonly versions: ContextVersion[] = [];

  loadRun(runId: string): Promise<RunState | undefined> {
    return Promise.resolve(this.runs.get(runId));
  }

  loadContexts(tenant: string): Promise<ContextState> {
    return Promise.resolve(this.contexts.get(tenant) ?? emptyContextState());
  }

  save(u: { tenant: string; run?: RunState; contexts?: ContextState; context?: ContextVersion }): Promise<void> {
    if (u.run) this.runs.set(u.run.run_id, u.run);
    if (u.contexts) this.contexts.set(u.tenant, u.contexts);
    if (u.context) this.versions.push(u.context);
    return Promise.resolve();
  }
}

/**
 * The blueprint's decision with the run checks' answer folded in, before scoring (docs/acm.md "Run governance"):
 * when `combined` (the most severe of both) is stricter, the decision takes it, from the tripwire stage, with
 * the violations among its reasons, and a refusal halts it (it is final: not scored further). The stream's
 * StewardEngine, `eval --bundles` and the replay verifier all score this, so their records agree
 * (spec-decisions D30).
 */
export function raiseDecision<T extends { intervention: Intervention; halted: boolean; stage: string; reasons: string[] }>(
  d: T,
  combined: Intervention,
  violations: readonly { code: string; message: string }[],
): T {
  if (severityRank(combined) <= severityRank(d.intervention)) return d;
  return { ...d, intervention: combined, halted: d.halted || !isApproved(combined), stage: 'tripwire', reasons: [...d.reasons, ...violations.map((v) => `acm:${v.code}: ${v.message}`)] };
}

/** The run's POLICY_DECISION for an event (ACM §11): the combined answer, with the ACM checks' part and digests. */
export function runPolicyDecisionDraft(
  trace: Trace,
  runId: string,
  o: { tenant: string; nowMs: number; engineVersion?: string; eventId?: string },
  answer: BlueprintAnswer,
  intervention: Intervention,
  approved: boolean,
  check: AcmCheck | undefined,
  digests?: { request?: string; response?: string; policy?: string },
): LedgerDraft {
  const task = (trace.task as { id?: unknown } | undefined)?.id;
  return acmPolicyDecisionDraft({
    trace_id: trace.trace_id,
    ...(o.eventId !== undefined ? { event_id: o.eventId } : {}),
    agent_id: trace.agent_id,
    tenant: o.tenant,
    run_id: runId,
    hook: trace.hook,
    ts_ms: o.nowMs,
    blueprint: answer.blueprint,
    intervention,
    approved,
    stage: answer.stage,
    reasons: answer.reasons,
    tripwires: answer.tripwires,
    rules: answer.rules,
    engine_version: o.engineVersion,
    ...(typeof task === 'string' ? { task_id: task } : {}),
    ...(digests ? { request_digest: digests.request, response_digest: digests.response, policy_digest: digests.policy } : {}),
    ...(check ? { acm: { intervention: check.intervention, codes: check.violations.map((v) => v.code) } } : {}),
  });
}
