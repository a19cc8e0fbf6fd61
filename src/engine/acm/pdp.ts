/**
 * The task policy interface (ACM §14.1) as Steward records it: a PDP request (the policy input and
 * every piece of state the decision read: rate-window counts, storage.get values, trust debt, scorer
 * answers) and the PDP response. With the reads recorded, a replay re-evaluates the decision without
 * live state: RecordingStateStore captures reads around a live store, RecordedStateStore answers them
 * back in the same order.
 */
import { StewardError } from '../../errors.js';
import type { Intervention, MetricOutcome, StateStore, Trace, TrustDebtLevel } from '../types.js';
import type { AcmCheck } from './run-step.js';

export type StateRead =
  | { op: 'get'; ns: string; key: string; value: unknown }
  | { op: 'hit'; ns: string; key: string; window_ms: number; now_ms: number; hit_id: string; count: number };

/** The §14.1 policy input of a task hook (the trace's own fields; `action` is the hook). */
export interface TaskPolicyInput {
  action: string;
  task?: unknown;
  goal?: unknown;
  plan?: unknown;
  run?: unknown;
  metrics?: unknown;
  output?: unknown;
  error?: unknown;
  verification?: unknown;
}

export interface PolicyRequestRecord {
  /** Position of the event in the run (1-based); names the request/response pair. */
  seq: number;
  trace_id: string;
  /** Idempotency id when it differs from trace_id. */
  event_id?: string;
  hook: string;
  /** 1-based line of the trace in engine-trace/traces.jsonl, and sha256 of that line. */
  trace_line: number;
  trace_digest: string;
  now_ms: number;
  /** §14.1 input for task hooks. */
  input?: TaskPolicyInput;
  blueprint: { id: string; version: string };
  /** What the decision read, in order. */
  reads: StateRead[];
  trust_debt: { debt: number; level: TrustDebtLevel };
  /** The scorers' answers (CTQ inputs). */
  scorer_answers: MetricOutcome[];
}

export interface PolicyResponseRecord {
  seq: number;
  trace_id: string;
  /** The blueprint's decision (tripwires, rules, CTQ). */
  blueprint: {
    intervention: Intervention;
    stage: string;
    tripwires: { id: string; fired: boolean; decision?: string }[];
    rules: { id: string; passed: boolean; decision?: string }[];
    ctq: number | null;
    risk: number | null;
  };
  /** The ACM checks (ACM hooks only). */
  acm?: Pick<AcmCheck, 'intervention' | 'rejected' | 'violations' | 'verification'> & { problems: { code: string; path: string; message: string }[] };
  /** The answer: the most severe of both. */
  intervention: Intervention;
  approved: boolean;
  /** The signed PVS-1 verdict as issued. */
  verdict?: Record<string, unknown>;
}

const TASK_HOOKS = new Set(['task.pre', 'task.post']);

export function taskPolicyInput(trace: Trace): TaskPolicyInput | undefined {
  if (!TASK_HOOKS.has(trace.hook)) return undefined;
  const out: TaskPolicyInput = { action: trace.hook };
  for (const k of ['task', 'goal', 'plan', 'run', 'metrics', 'output', 'error', 'verification'] as const) if (trace[k] !== undefined) out[k] = trace[k];
  return out;
}

/**
 * Wraps the live store and records every read per namespace (an agent's traces are decided strictly in
 * order, so a namespace's reads between two `take` calls belong to one decision).
 */
export class RecordingStateStore implements StateStore {
  private readonly reads = new Map<string, StateRead[]>();

  constructor(private readonly inner: StateStore) {}

  private push(ns: string, r: StateRead): void {
    const list = this.reads.get(ns);
    if (list) list.push(r);
    else this.reads.set(ns, [r]);
  }

  async get(namespace: string, key: string): Promise<unknown> {
    const value = await this.inner.get(namespace, key);
    this.push(namespace, { op: 'get', ns: namespace, key, value: value === undefined ? null : value });
    return value;
  }

  set(namespace: string, key: string, value: unknown): Promise<void> {
    return this.inner.set ? this.inner.set(namespace, key, value) : Promise.resolve();
  }

  async hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    const count = await this.inner.hit(namespace, key, windowMs, nowMs, hitId);
    this.push(namespace, { op: 'hit', ns: namespace, key, window_ms: windowMs, now_ms: nowMs, hit_id: hitId, count });
    return count;
  }

  /** The reads recorded for a namespace since the last take. */
  take(namespace: string): StateRead[] {
    const r = this.reads.get(namespace) ?? [];
    this.reads.delete(namespace);
    return r;
  }
}

/**
 * Answers a decision's reads from its record. A read the record does not hold (a tampered request,
 * another blueprint) fails like an unavailable store: the condition fails closed and the replayed
 * decision differs, which the verifier reports.
 */
export class RecordedStateStore implements StateStore {
  private reads: StateRead[] = [];
  private used: boolean[] = [];

  /** Loads the reads of the next decision to replay. */
  load(reads: readonly StateRead[]): void {
    this.reads = reads.slice();
    this.used = reads.map(() => false);
  }

  /** Reads of the record the replay did not make (the replayed decision read less than the original). */
  unused(): StateRead[] {
    return this.reads.filter((_, i) => !this.used[i]);
  }

  private find(pred: (r: StateRead) => boolean, what: string): StateRead {
    const i = this.reads.findIndex((r, j) => !this.used[j] && pred(r));
    if (i < 0) throw new StewardError('STEWARD_STATE_UNAVAILABLE', `replay: the recorded state holds no ${what}`);
    this.used[i] = true;
    return this.reads[i]!;
  }

  get(namespace: string, key: string): Promise<unknown> {
    try {
      const r = this.find((x) => x.op === 'get' && x.ns === namespace && x.key === key, `storage.get('${key}')`);
      return Promise.resolve(r.op === 'get' && r.value !== null ? r.value : undefined);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    try {
      const r = this.find((x) => x.op === 'hit' && x.ns === namespace && x.key === key && x.hit_id === hitId && x.window_ms === windowMs && x.now_ms === nowMs, `rate-window count for '${key}'`);
      return Promise.resolve(r.op === 'hit' ? r.count : 0);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

/** A policy response's ACM part: the check without the run id/hook (they are in the request). */
export function acmSummary(check: AcmCheck | undefined): PolicyResponseRecord['acm'] {
  if (!check) return undefined;
  return {
    intervention: check.intervention,
    rejected: check.rejected,
    problems: check.problems.map((p) => ({ code: p.code, path: p.path, message: p.message })),
    violations: check.violations,
    ...(check.verification ? { verification: check.verification } : {}),
  };
}
