/**
 * Read-through cache of agents' raw trust-debt state for the decision path (ACGP-1004 §10, spec-decisions D6,
 * docs/spec-decisions.md "Trust-debt read cache").
 *
 * The engine reads the agent's trust debt before every decision. What is cached is the stored state
 * (debt at its last event, audit window, level), never a decayed value: decay and due audit credits are
 * computed locally at each trace's event time with the caller's config (`debtAt`), exactly as the Redis
 * store computes them. The only thing a cached entry can miss is an accumulation applied elsewhere less
 * than `ttlMs` ago — already inherent in the stream, where debt moves asynchronously (acgp.verdicts →
 * trust-debt stage) after the decision that caused it. Applies made through this process's store
 * (`invalidating`) drop the entry at once, so a single-process deployment reads its own writes.
 *
 * Keys are tenant + agent; the cache is bounded (oldest entry evicted first) and concurrent misses for
 * one agent share one Redis read. Lives in the adapters: src/engine stays pure.
 */
import { debtAt, levelFor, type AgentDebtState, type TrustDebtStore } from '../../engine/trust-debt/index.js';

/** Where raw states come from (RedisTrustDebtStore.state). */
export interface TrustDebtStateSource {
  state(tenant: string, agentId: string): Promise<AgentDebtState | undefined>;
}

export interface TrustDebtReadCacheOptions {
  /** How long a read state is served (wall-clock ms). 0 disables caching (every read goes to the source). */
  ttlMs: number;
  /** Most agents kept (default 100 000); the least recently loaded is evicted first. */
  maxEntries?: number;
  /** Wall clock (injectable for tests). */
  now?: () => number;
}

interface Entry {
  state: AgentDebtState | undefined;
  loadedAt: number;
}
interface Loading {
  promise: Promise<AgentDebtState | undefined>;
  invalidated: boolean;
}

export class TrustDebtReadCache {
  readonly ttlMs: number;
  readonly maxEntries: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Loading>();
  /** Reads answered from the cache / from the source (for tests and diagnostics). */
  hits = 0;
  misses = 0;

  constructor(
    private readonly source: TrustDebtStateSource,
    opts: TrustDebtReadCacheOptions,
  ) {
    this.ttlMs = Math.max(0, opts.ttlMs);
    this.maxEntries = Math.max(1, opts.maxEntries ?? 100_000);
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  private static key(tenant: string, agentId: string): string {
    return `${tenant}\u0000${agentId}`;
  }

  /** The agent's raw stored state (undefined for an unknown agent), at most `ttlMs` old. */
  state(tenant: string, agentId: string): Promise<AgentDebtState | undefined> {
    if (this.ttlMs === 0) {
      this.misses++;
      return this.source.state(tenant, agentId);
    }
    const k = TrustDebtReadCache.key(tenant, agentId);
    const e = this.entries.get(k);
    if (e !== undefined) {
      if (this.now() - e.loadedAt < this.ttlMs) {
        this.hits++;
        return Promise.resolve(e.state);
      }
      this.entries.delete(k);
    }
    const pending = this.loading.get(k);
    if (pending) {
      this.hits++;
      return pending.promise;
    }
    this.misses++;
    const loadedAt = this.now();
    const l: Loading = { promise: this.source.state(tenant, agentId), invalidated: false };
    this.loading.set(k, l);
    l.promise.then(
      (state) => {
        if (this.loading.get(k) === l) this.loading.delete(k);
        // A write invalidated the key while this read was in flight: the value may predate it.
        if (l.invalidated) return;
        this.entries.delete(k);
        this.entries.set(k, { state, loadedAt });
        if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      },
      () => {
        if (this.loading.get(k) === l) this.loading.delete(k);
      },
    );
    return l.promise;
  }

  /** Forget the agent's entry (after this process changed its debt); an in-flight read is not stored. */
  invalidate(tenant: string, agentId: string): void {
    const k = TrustDebtReadCache.key(tenant, agentId);
    this.entries.delete(k);
    const l = this.loading.get(k);
    if (l) {
      l.invalidated = true;
      this.loading.delete(k);
    }
  }

  clear(): void {
    this.entries.clear();
    for (const l of this.loading.values()) l.invalidated = true;
    this.loading.clear();
  }
}

/**
 * `store` whose `current()` reads through `cache` and computes decay/audits locally at `atMs`.
 * Everything else is the store's own method.
 */
export function cachedTrustDebtReads(store: TrustDebtStore, cache: TrustDebtReadCache): TrustDebtStore {
  const wrapped = Object.create(store) as TrustDebtStore;
  wrapped.current = async (tenant, agentId, atMs, cfg) => {
    const debt = debtAt(await cache.state(tenant, agentId), atMs, cfg);
    return { debt, level: levelFor(debt, cfg) };
  };
  return wrapped;
}

/** `store` whose writes (apply, remediation decisions) drop the touched agents' cache entries. */
export function invalidatingTrustDebtWrites<S extends TrustDebtStore>(store: S, cache: TrustDebtReadCache): S {
  const wrapped = Object.create(store) as S;
  wrapped.apply = async (ev, cfg) => {
    // Before: a read in flight now may return the pre-write state; after: drop what was read meanwhile.
    cache.invalidate(ev.tenant, ev.agentId);
    try {
      return await store.apply(ev, cfg);
    } finally {
      cache.invalidate(ev.tenant, ev.agentId);
    }
  };
  wrapped.decideRemediation = async (requestId, decision, opts, cfg) => {
    const r = await store.decideRemediation(requestId, decision, opts, cfg);
    cache.invalidate(r.request.tenant, r.request.agentId);
    return r;
  };
  wrapped.sweep = async (atMs, cfgFor) => {
    const changes = await store.sweep(atMs, cfgFor);
    for (const c of changes) cache.invalidate(c.tenant, c.agentId);
    return changes;
  };
  return wrapped;
}
