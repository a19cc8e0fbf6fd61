/**
 * Where a stream stage keeps ACM run governance state (docs/acm.md "In the stream"): a run's RunState per
 * tenant + run id, a tenant's ContextState, both plain JSON, updated by compare-and-set and expiring on
 * event time (docs/spec-decisions.md D23). The Redis implementation is src/adapters/redis/acm-state-store.ts.
 *
 * `scopedAcmStateStore` adapts it to the AcmStateStore governAcmEvent uses (stage.ts): the states an event
 * was checked against are the ones it commits over, or nothing is written and the event is retried (a
 * retryable error): two instances governing the same run or tenant never lose each other's changes.
 */
import { StewardError } from '../../errors.js';
import { emptyContextState, type ContextState } from './context.js';
import type { RunState } from './run-state.js';
import type { AcmStateStore } from './stage.js';

export interface AcmRunStateStore {
  getRun(tenant: string, runId: string, nowMs: number): Promise<RunState | undefined>;
  getContexts(tenant: string, nowMs: number): Promise<ContextState | undefined>;
  /** Compare-and-set: `fn` gets the current state (undefined: none or expired at `nowMs`). */
  updateRun(tenant: string, runId: string, nowMs: number, fn: (prev: RunState | undefined) => RunState): Promise<RunState>;
  updateContexts(tenant: string, nowMs: number, fn: (prev: ContextState | undefined) => ContextState): Promise<ContextState>;
}

/** One event's view of the store: loads remember what they read, saves commit only over exactly that. */
export function scopedAcmStateStore(store: AcmRunStateStore, tenant: string, nowMs: number): AcmStateStore {
  const runs = new Map<string, string>();
  let contexts: string | undefined;
  const conflict = (what: string): never => {
    throw new StewardError('STEWARD_STATE_UNAVAILABLE', `ACM ${what} changed while the event was governed (retried)`, { retryable: true });
  };
  return {
    async loadRun(runId) {
      const r = await store.getRun(tenant, runId, nowMs);
      runs.set(runId, JSON.stringify(r ?? null));
      return r;
    },
    async loadContexts(t) {
      const c = await store.getContexts(t, nowMs);
      contexts = JSON.stringify(c ?? null);
      return c ?? emptyContextState();
    },
    async save(u) {
      // Contexts first: a context version is idempotent (the same content is the same version), so a run
      // update that then fails and is retried records nothing twice.
      if (u.contexts) {
        const next = u.contexts;
        await store.updateContexts(tenant, nowMs, (prev) => (contexts === undefined || JSON.stringify(prev ?? null) === contexts ? next : conflict(`contexts of tenant ${tenant}`)));
      }
      if (u.run) {
        const next = u.run;
        const seen = runs.get(next.run_id);
        await store.updateRun(tenant, next.run_id, nowMs, (prev) => (seen === undefined || JSON.stringify(prev ?? null) === seen ? next : conflict(`run ${next.run_id}`)));
      }
    },
  };
}
