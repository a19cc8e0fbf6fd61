/**
 * An in-memory run governor: run states by run id and context registries by tenant, around the pure
 * reducers. `steward eval --bundles` and the replay verifier use it; the stream stage calls
 * checkAcmEvent/commitAcmEvent itself with states from its own store (docs/acm.md "Stage contract").
 */
import type { LedgerDraft } from '../ledger/types.js';
import type { Trace } from '../types.js';
import { emptyContextState, type ContextState, type ContextVersion } from './context.js';
import { emptyRunState, isAcmHook, runIdOf, type AcmEnv, type RunState } from './run-state.js';
import { checkAcmEvent, commitAcmEvent, type AcmCheck, type CommitInput } from './run-step.js';

export interface GovernedCommit {
  run?: RunState;
  drafts: LedgerDraft[];
  /** Context versions this event made the run depend on: a packet it received, or the one a plan bound. */
  contexts: ContextVersion[];
}

export class AcmGovernor {
  private readonly runs = new Map<string, RunState>();
  private readonly contexts = new Map<string, ContextState>();
  /** Every stored context version, by `id@version` (the store an adapter would write to). */
  private readonly versions = new Map<string, ContextVersion>();

  constructor(readonly env: AcmEnv) {
    env.planCache ??= new Map();
  }

  /** True when the trace takes part in run governance (an ACM hook, or any trace naming a run). */
  governs(trace: Trace): boolean {
    return isAcmHook(trace.hook) || runIdOf(trace) !== undefined;
  }

  run(runId: string): RunState | undefined {
    return this.runs.get(runId);
  }

  runIds(): string[] {
    return [...this.runs.keys()];
  }

  contextVersion(id: string, version: number): ContextVersion | undefined {
    return this.versions.get(`${id}@${version}`);
  }

  check(trace: Trace, tenant: string): AcmCheck | undefined {
    if (!isAcmHook(trace.hook)) return undefined;
    const runId = runIdOf(trace);
    return checkAcmEvent({ run: runId ? this.runs.get(runId) : undefined, contexts: this.contextsOf(tenant) }, trace, this.env);
  }

  commit(trace: Trace, check: AcmCheck | undefined, c: CommitInput & { tenant: string }): GovernedCommit {
    const runId = runIdOf(trace);
    if (!check) {
      // A non-ACM trace of a run (a tool call inside a task): counted, nothing to govern.
      if (runId) {
        const run = this.runs.get(runId) ?? emptyRunState(runId, trace.agent_id);
        this.runs.set(runId, { ...run, events: run.events + 1 });
      }
      return { run: runId ? this.runs.get(runId) : undefined, drafts: [], contexts: [] };
    }
    const before = runId ? this.runs.get(runId) : undefined;
    const res = commitAcmEvent({ run: before, contexts: this.contextsOf(c.tenant) }, trace, check, c, this.env);
    this.contexts.set(c.tenant, res.contexts);
    const contexts: ContextVersion[] = [];
    if (res.context) {
      this.versions.set(`${res.context.id}@${res.context.version}`, res.context);
      contexts.push(res.context);
    } else if (trace.hook === 'context.packet' && !check.rejected && c.decision.approved) {
      // A redelivered packet is the newest version again; the run still depends on it.
      const v = res.contexts.contexts[(trace.context as { id: string }).id];
      if (v) contexts.push(v);
    }
    if (runId && res.run) {
      this.runs.set(runId, res.run);
      const bound = res.run.plan?.context;
      if (bound && bound.digest !== before?.plan?.context.digest) {
        const v = this.versions.get(`${bound.id}@${bound.version}`);
        if (v) contexts.push(v);
      }
    }
    return { run: res.run, drafts: res.drafts, contexts };
  }

  /** Makes a stored version known before a replay (a packet received outside the run's own traces). */
  seedContext(tenant: string, v: ContextVersion): void {
    const s = this.contextsOf(tenant);
    const head = s.contexts[v.id];
    if (!head || head.version < v.version) this.contexts.set(tenant, { contexts: { ...s.contexts, [v.id]: v } });
    this.versions.set(`${v.id}@${v.version}`, v);
  }

  private contextsOf(tenant: string): ContextState {
    let s = this.contexts.get(tenant);
    if (!s) {
      s = emptyContextState();
      this.contexts.set(tenant, s);
    }
    return s;
  }
}
