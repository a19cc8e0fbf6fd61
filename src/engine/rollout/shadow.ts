/**
 * Shadow evaluation (docs/rollout.md "Shadow evaluation"): a candidate blueprint set decides the same trace
 * after the active decision, through its own engine whose state is a read-only view (rate windows counted
 * as if this trace were added, nothing written; trust debt read, never moved; no gate, no ACM run state).
 * It never changes the answer: its failures are counted and dropped.
 */
import type { DecisionRecord } from '../records.js';
import type { StateStore, Trace } from '../types.js';
import type { TrustDebtStore } from '../trust-debt/index.js';
import { StewardError } from '../../errors.js';
import { diffDecisions, type ShadowDiff } from './diff.js';

export interface ShadowDecider {
  decide(trace: Trace, nowMs: number, eventId?: string): Promise<DecisionRecord>;
}

export interface ShadowEvaluatorOptions {
  shadowId: string;
  engine: ShadowDecider;
  nowMs: () => number;
  onError?: (e: unknown) => void;
}

export class ShadowEvaluator {
  errors = 0;

  constructor(private readonly o: ShadowEvaluatorOptions) {}

  get shadowId(): string {
    return this.o.shadowId;
  }

  /** The diff of the active decision and the candidate's, or undefined when the candidate failed. */
  async evaluate(trace: Trace, active: DecisionRecord, eventTimeMs: number): Promise<ShadowDiff | undefined> {
    try {
      const shadow = await this.o.engine.decide(trace, eventTimeMs, active.eventId ?? trace.trace_id);
      return diffDecisions(active, shadow, { shadowId: this.o.shadowId, traceId: trace.trace_id, agentId: trace.agent_id, tenant: active.tenant, eventTimeMs, evaluatedAtMs: this.o.nowMs() });
    } catch (e) {
      this.errors++;
      this.o.onError?.(e);
      return undefined;
    }
  }
}

/** Trust debt for a shadow engine: reads pass through, any movement is refused (it would be real debt). */
export function readOnlyTrustDebt(store: Pick<TrustDebtStore, 'current'>): TrustDebtStore {
  const refuse = (): never => {
    throw new StewardError('STEWARD_INTERNAL', 'shadow evaluation must not move trust debt');
  };
  return new Proxy({ current: store.current.bind(store) } as TrustDebtStore, {
    get: (t, k) => (k === 'current' ? t.current : k === 'then' ? undefined : refuse),
  });
}

/** State for a shadow engine: `peek` counts a rate window as if the hit were added, and writes nothing. */
export function readOnlyState(store: Pick<StateStore, 'get'> & { peekHit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> }): StateStore {
  return {
    get: (ns, key) => store.get(ns, key),
    hit: (ns, key, windowMs, nowMs, hitId) => store.peekHit(ns, key, windowMs, nowMs, hitId),
  };
}
