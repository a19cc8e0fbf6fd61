/**
 * The periodic good-behaviour audit sweep (ACGP-1004 §10.4.2) over a trust-debt store: a scheduler around
 * the store's atomic sweep, with the Redis store's cross-instance lock and outbox when it has them.
 */
import { HOUR_MS, type TrustDebtChange, type TrustDebtStore } from '../engine/trust-debt/index.js';
import type { TrustDebtConfig } from '../engine/types.js';
import type { RedisTrustDebtStore } from '../adapters/redis/trust-debt-store.js';

export interface AuditSweepOptions {
  /** How often to sweep (default 15 min). */
  intervalMs?: number;
  /**
   * Sweep up to `now − lagMs` (default 1 h): an audit window must not be credited while a non-ok event
   * from before its end may still be in the Kafka backlog (time is event time, spec-decisions D7).
   */
  lagMs?: number;
  /** How long one instance holds the sweep lock (default intervalMs); expires if that instance dies. */
  lockMs?: number;
  cfgFor: (tenant: string, agentId: string) => TrustDebtConfig;
  /** Receives the credits granted (publish them to acgp.trust-debt like any other change). */
  onChanges: (changes: TrustDebtChange[]) => Promise<void> | void;
  onError?: (e: unknown) => void;
  now?: () => number;
  /**
   * Partitions where the pipeline (the trust-debt stage, or a stage upstream of it) still has records from
   * before a cutoff to process (a backlog longer than `lagMs`: a Redis outage, a stopped or slow stage).
   * While any are, the sweep credits nothing.
   */
  backlogBefore?: (cutoffMs: number) => Promise<string[]>;
  /** Told when a sweep was held back by a backlog (the partitions behind). */
  onHeld?: (behind: string[]) => void;
}

/** What the periodic sweep needs; the Redis store adds the lock and the outbox, the memory store has neither. */
export type SweepableStore = Pick<TrustDebtStore, 'sweep'> &
  Partial<Pick<RedisTrustDebtStore, 'drainAuditOutbox' | 'tryLockSweep' | 'unlockSweep'>>;

export interface AuditSweep {
  stop: () => Promise<void>;
  /** One sweep now: returns the credits it granted (`skipped` when another instance holds the lock). */
  runOnce: () => Promise<TrustDebtChange[]>;
}

/**
 * Periodic good-behaviour audit (§10.4.2) over all known agents. Safe on every instance at once: each
 * agent's credit is atomic and advances its window, so a window is credited once whoever sweeps; a lock
 * lets one instance do the work per interval. With the Redis store, credits go through the outbox
 * (published, then removed), so a crash between granting and publishing loses no event.
 */
export function startAuditSweep(store: SweepableStore, o: AuditSweepOptions): AuditSweep {
  const now = o.now ?? Date.now;
  const intervalMs = o.intervalMs ?? 15 * 60_000;
  let running: Promise<unknown> = Promise.resolve();
  const runOnce = async (): Promise<TrustDebtChange[]> => {
    let token: string | undefined;
    if (store.tryLockSweep) {
      token = await store.tryLockSweep(o.lockMs ?? intervalMs);
      if (token === undefined) return [];
    }
    try {
      const cutoff = now() - (o.lagMs ?? HOUR_MS);
      const behind = (await o.backlogBefore?.(cutoff)) ?? [];
      if (behind.length > 0) o.onHeld?.(behind);
      const changes = behind.length > 0 ? [] : await store.sweep(cutoff, o.cfgFor);
      if (store.drainAuditOutbox) {
        // also publishes credits an earlier sweep granted but could not publish
        while ((await store.drainAuditOutbox(o.onChanges)).length > 0);
      } else if (changes.length > 0) await o.onChanges(changes);
      return changes;
    } finally {
      if (token !== undefined) await store.unlockSweep?.(token).catch(() => undefined);
    }
  };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return; // a slow sweep is not overlapped by the next tick
    busy = true;
    running = runOnce()
      .catch((e: unknown) => o.onError?.(e))
      .finally(() => {
        busy = false;
      });
  }, intervalMs);
  timer.unref();
  return {
    runOnce,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
