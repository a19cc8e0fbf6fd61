/**
 * ACM run governance state in Redis (AcmRunStateStore, src/engine/acm/state-store.ts; docs/acm.md "In the
 * stream"): a run's state (RunState and its last answers) under `<prefix>acm:{<tenant>:<run>}:run` (the run's keys share one hash tag,
 * so one Redis Cluster slot), a tenant's ContextState under `<prefix>acm:{<tenant>}:contexts`. Updates are
 * compare-and-set (cas-json-store.ts); expiry is on event time (docs/spec-decisions.md D23).
 */
import type { RedisClient } from './client.js';
import type { ContextState } from '../../engine/acm/context.js';
import type { AcmRunStateStore, StoredRun } from '../../engine/acm/state-store.js';
import { CasJsonStore } from './cas-json-store.js';

export interface RedisAcmStateStoreOptions {
  prefix: string;
  /** Event-time TTL of an idle run (default 7 days). */
  runTtlMs?: number;
  /** Event-time TTL of a tenant's context registry without a new packet (default 30 days). */
  contextTtlMs?: number;
}

export class RedisAcmStateStore implements AcmRunStateStore {
  private readonly runs: CasJsonStore<StoredRun>;
  private readonly contexts: CasJsonStore<ContextState>;

  constructor(
    redis: RedisClient,
    private readonly o: RedisAcmStateStoreOptions,
  ) {
    this.runs = new CasJsonStore(redis, { ttlMs: o.runTtlMs ?? 7 * 86_400_000, what: 'ACM run state' });
    this.contexts = new CasJsonStore(redis, { ttlMs: o.contextTtlMs ?? 30 * 86_400_000, what: 'ACM context registry' });
  }

  runKey(tenant: string, runId: string): string {
    const e = encodeURIComponent;
    return `${this.o.prefix}acm:{${e(tenant)}:${e(runId)}}:run`;
  }

  contextsKey(tenant: string): string {
    return `${this.o.prefix}acm:{${encodeURIComponent(tenant)}}:contexts`;
  }

  async getRun(tenant: string, runId: string, nowMs: number): Promise<StoredRun | undefined> {
    return (await this.runs.read(this.runKey(tenant, runId), nowMs)).value;
  }

  async getContexts(tenant: string, nowMs: number): Promise<ContextState | undefined> {
    return (await this.contexts.read(this.contextsKey(tenant), nowMs)).value;
  }

  updateRun(tenant: string, runId: string, nowMs: number, fn: (prev: StoredRun | undefined) => StoredRun): Promise<StoredRun> {
    return this.runs.update(this.runKey(tenant, runId), nowMs, fn);
  }

  updateContexts(tenant: string, nowMs: number, fn: (prev: ContextState | undefined) => ContextState): Promise<ContextState> {
    return this.contexts.update(this.contextsKey(tenant), nowMs, fn);
  }
}
