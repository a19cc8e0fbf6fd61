/**
 * In-process StateStore for `steward eval` and tests: the same semantics as RedisStateStore
 * (sliding window: hits after now - window, idempotent per hitId), without I/O.
 */
import type { StateStore } from '../types.js';

interface Window {
  /** Hit times in insertion order, with their ids. */
  hits: { id: string; t: number }[];
  ids: Set<string>;
}

export class MemoryStateStore implements StateStore {
  private readonly values = new Map<string, unknown>();
  private readonly windows = new Map<string, Window>();

  constructor(initial?: Record<string, Record<string, unknown>>) {
    for (const [ns, kv] of Object.entries(initial ?? {})) for (const [k, v] of Object.entries(kv)) this.values.set(`${ns}\u0000${k}`, v);
  }

  get(namespace: string, key: string): Promise<unknown> {
    return Promise.resolve(this.values.get(`${namespace}\u0000${key}`));
  }

  set(namespace: string, key: string, value: unknown): Promise<void> {
    this.values.set(`${namespace}\u0000${key}`, value);
    return Promise.resolve();
  }

  hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    const k = `${namespace}\u0000${key}`;
    let w = this.windows.get(k);
    if (!w) {
      w = { hits: [], ids: new Set() };
      this.windows.set(k, w);
    }
    const cutoff = nowMs - windowMs;
    // Prune what can never count again (the Redis script's rule with no event-time skew slack: score <= now - window).
    const kept = w.hits.filter((h) => h.t > cutoff);
    if (kept.length !== w.hits.length) {
      w.hits = kept;
      w.ids = new Set(kept.map((h) => h.id));
    }
    if (!w.ids.has(hitId)) {
      w.hits.push({ id: hitId, t: nowMs });
      w.ids.add(hitId);
    }
    let n = 0;
    // Later event times count too (out-of-order delivery), exactly like the Redis script.
    for (const h of w.hits) if (h.t > cutoff) n++;
    return Promise.resolve(n);
  }
}
