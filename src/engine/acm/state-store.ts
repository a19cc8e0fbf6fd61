/**
 * ACM run governance in a stream stage (docs/acm.md "In the stream"): where the state lives and one event's
 * governance over it. A run's state (per tenant + run id) and a tenant's context registry are plain JSON,
 * updated by compare-and-set and expiring on event time (docs/spec-decisions.md D23); the Redis
 * implementation is src/adapters/redis/acm-state-store.ts.
 *
 * `governRunEvent` follows the Stage contract (check → blueprint → commit) and commits over exactly the
 * states the event was checked against, or writes nothing and fails retryable (the stage processes the
 * input again): two instances governing the same run or tenant never lose each other's changes. The run's
 * value keeps the answers of its last events by event id, written in the same compare-and-set as the run:
 * a redelivered event (a crash after the commit, before the offset commit) gets its first answer and ledger
 * drafts again instead of being governed a second time over the state it already changed.
 */
import { StewardError } from '../../errors.js';
import type { LedgerDraft } from '../ledger/types.js';
import { isApproved, mostSevere, type Intervention, type Trace } from '../types.js';
import { emptyContextState, type ContextState, type ContextVersion } from './context.js';
import { acmSummary, type PolicyResponseRecord } from './pdp.js';
import type { AcmProblem } from './problems.js';
import { isAcmHook, runIdOf, type AcmEnv, type RunState } from './run-state.js';
import { checkAcmEvent, commitAcmEvent, type AcmCheck } from './run-step.js';
import { runPolicyDecisionDraft, type BlueprintAnswer } from './stage.js';

/** The answer an event of the run got (kept for redeliveries). */
export interface AcmAnswer {
  event_id: string;
  /** The run checks' own intervention. */
  acm_intervention?: Intervention;
  violations: string[];
  /** POLICY_DECISION then the event's ACM entries, as first published. */
  drafts: LedgerDraft[];
  /** What the event's replay-bundle records need (RunEventRecord), kept for a redelivery. */
  record?: RunEventRecord;
}

/**
 * What the run's replay-bundle records of one decided event need from the run's state (docs/acm.md "Export from
 * the stream"): its place in the run, as `steward eval --bundles` numbers it (the PDP request's `seq` and
 * `trace_line`: events of the run counted by compare-and-set, so events of several agents, such as an approver's,
 * take their place), the policy response's ACM part, and the context versions the event recorded or bound.
 */
export interface RunEventRecord {
  seq: number;
  acm?: PolicyResponseRecord['acm'];
  contexts: ContextVersion[];
}

export interface StoredRun {
  /** Absent until the run has a plan (events before it are still counted and answered). */
  run?: RunState;
  /** The answers of the run's last events (at most ANSWERS_KEPT), oldest first. */
  answers: AcmAnswer[];
  /** Decided events of the run so far (absent in values written before it was kept: counted from 0). */
  seq?: number;
}

export const ANSWERS_KEPT = 256;

export interface AcmRunStateStore {
  getRun(tenant: string, runId: string, nowMs: number): Promise<StoredRun | undefined>;
  getContexts(tenant: string, nowMs: number): Promise<ContextState | undefined>;
  /** Compare-and-set: `fn` gets the current value (undefined: none or expired at `nowMs`). */
  updateRun(tenant: string, runId: string, nowMs: number, fn: (prev: StoredRun | undefined) => StoredRun): Promise<StoredRun>;
  updateContexts(tenant: string, nowMs: number, fn: (prev: ContextState | undefined) => ContextState): Promise<ContextState>;
}

export type RunEventOutcome =
  | { kind: 'not_governed' }
  /** Invalid input: dead-letter it with these problems (nothing was changed). */
  | { kind: 'rejected'; check: AcmCheck; problems: AcmProblem[] }
  | {
      kind: 'decided';
      run_id?: string;
      /** The answer: the most severe of the blueprint's and the run checks'. */
      intervention: Intervention;
      acm_intervention?: Intervention;
      violations: { code: string; message: string }[];
      drafts: LedgerDraft[];
      /** A redelivery: the first answer's drafts, nothing governed again. */
      replayed: boolean;
      /** For an event of a run: its records' run-state part (the first answer's again for a redelivery). */
      record?: RunEventRecord;
    };

export interface RunEventOptions {
  env: AcmEnv;
  tenant: string;
  nowMs: number;
  /** Idempotency id of the input (EvalContext.eventId); the trace id by default. */
  eventId?: string;
  engineVersion?: string;
}

const conflict = (what: string): never => {
  throw new StewardError('STEWARD_STATE_UNAVAILABLE', `ACM ${what} changed while the event was governed (retried)`, { retryable: true });
};

/** One event of a run (docs/acm.md "Stage contract"); `decide` is the blueprint, called once for a valid event. */
export async function governRunEvent(store: AcmRunStateStore, trace: Trace, o: RunEventOptions, decide: () => Promise<BlueprintAnswer>): Promise<RunEventOutcome> {
  const runId = runIdOf(trace);
  const acmHook = isAcmHook(trace.hook);
  if (!acmHook && runId === undefined) return { kind: 'not_governed' };
  const eventId = o.eventId ?? trace.trace_id;
  const stored = runId !== undefined ? await store.getRun(o.tenant, runId, o.nowMs) : undefined;
  const seenRun = JSON.stringify(stored ?? null);
  const done = stored?.answers.find((a) => a.event_id === eventId);
  if (done) {
    const answer = await decide();
    const intervention = done.acm_intervention ? mostSevere(answer.intervention, done.acm_intervention) : answer.intervention;
    return { kind: 'decided', run_id: runId, intervention, ...(done.acm_intervention ? { acm_intervention: done.acm_intervention } : {}), violations: done.violations.map((code) => ({ code, message: 'as first answered' })), drafts: done.drafts, replayed: true, ...(done.record ? { record: done.record } : {}) };
  }
  const contextsRead = acmHook ? await store.getContexts(o.tenant, o.nowMs) : undefined;
  const contexts = contextsRead ?? emptyContextState();
  const check = acmHook ? checkAcmEvent({ run: stored?.run, contexts }, trace, o.env) : undefined;
  if (check?.rejected) return { kind: 'rejected', check, problems: check.problems };
  const answer = await decide();
  const intervention = check ? mostSevere(answer.intervention, check.intervention) : answer.intervention;
  const approved = isApproved(intervention);
  const drafts: LedgerDraft[] = runId === undefined ? [] : [runPolicyDecisionDraft(trace, runId, { ...o, eventId }, answer, intervention, approved, check)];
  let run: RunState | undefined = stored?.run;
  const contextsOut: ContextVersion[] = [];
  if (check) {
    const c = commitAcmEvent({ run: stored?.run, contexts }, trace, check, { decision: { intervention, approved }, nowMs: o.nowMs, tenant: o.tenant, eventId }, o.env);
    drafts.push(...c.drafts);
    run = c.run;
    // As AcmGovernor.commit: a packet the event recorded (or, redelivered, its newest version), a context a plan bound.
    if (c.context) contextsOut.push(c.context);
    else if (trace.hook === 'context.packet' && approved) {
      const v = c.contexts.contexts[(trace.context as { id: string }).id];
      if (v) contextsOut.push(v);
    }
    const bound = c.run?.plan?.context;
    if (bound && bound.digest !== stored?.run?.plan?.context.digest) {
      const v = c.contexts.contexts[bound.id];
      if (v && v.version === bound.version) contextsOut.push(v);
    }
    // Contexts first: a context version is idempotent (the same content is the same version), so a run
    // update that then fails and is retried records nothing twice.
    if (c.contexts !== contexts) {
      const seen = JSON.stringify(contextsRead ?? null);
      const next = c.contexts;
      await store.updateContexts(o.tenant, o.nowMs, (prev) => (JSON.stringify(prev ?? null) === seen ? next : conflict(`contexts of tenant ${o.tenant}`)));
    }
  } else if (run) {
    run = { ...run, events: run.events + 1 };
  }
  const violations = check?.violations.map((v) => ({ code: v.code, message: v.message })) ?? [];
  let record: RunEventRecord | undefined;
  if (runId !== undefined) {
    const summary = acmSummary(check);
    record = { seq: (stored?.seq ?? 0) + 1, ...(summary ? { acm: summary } : {}), contexts: contextsOut };
    const answerRec: AcmAnswer = { event_id: eventId, ...(check ? { acm_intervention: check.intervention } : {}), violations: violations.map((v) => v.code), drafts, record };
    // Written for every decided event of the run, before its plan too: the count is the events' place in the run.
    const next: StoredRun = { ...(run ? { run } : {}), answers: [...(stored?.answers ?? []), answerRec].slice(-ANSWERS_KEPT), seq: record.seq };
    await store.updateRun(o.tenant, runId, o.nowMs, (prev) => (JSON.stringify(prev ?? null) === seenRun ? next : conflict(`run ${runId}`)));
  }
  return { kind: 'decided', run_id: runId, intervention, ...(check ? { acm_intervention: check.intervention } : {}), violations, drafts, replayed: false, ...(record ? { record } : {}) };
}

/** In-memory AcmRunStateStore (tests, single-process tools): the same compare-and-set contract, no expiry. */
export class MemoryAcmRunStateStore implements AcmRunStateStore {
  readonly runs = new Map<string, StoredRun>();
  readonly contexts = new Map<string, ContextState>();

  getRun(tenant: string, runId: string): Promise<StoredRun | undefined> {
    return Promise.resolve(this.runs.get(`${tenant}\u0000${runId}`));
  }

  getContexts(tenant: string): Promise<ContextState | undefined> {
    return Promise.resolve(this.contexts.get(tenant));
  }

  updateRun(tenant: string, runId: string, _nowMs: number, fn: (prev: StoredRun | undefined) => StoredRun): Promise<StoredRun> {
    return Promise.resolve().then(() => {
      const next = fn(this.runs.get(`${tenant}\u0000${runId}`));
      this.runs.set(`${tenant}\u0000${runId}`, next);
      return next;
    });
  }

  updateContexts(tenant: string, _nowMs: number, fn: (prev: ContextState | undefined) => ContextState): Promise<ContextState> {
    return Promise.resolve().then(() => {
      const next = fn(this.contexts.get(tenant));
      this.contexts.set(tenant, next);
      return next;
    });
  }
}
