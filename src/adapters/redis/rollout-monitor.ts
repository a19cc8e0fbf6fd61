/**
 * RolloutMonitor (docs/rollout.md "Rollback triggers"): the tripwire stage's view of the shared rollouts and
 * the watcher of their triggers on live traffic, across instances.
 *
 * - table(): the rollouts as last read from Redis (refreshed every refreshMs): what selection uses, with no
 *   Redis call per decision.
 * - record(): a decision's counts added locally (synchronous, no I/O on the decision path); flush() (every
 *   flushMs) adds them to the shared per-arm window counters in one pipeline and evaluates the canary
 *   blueprint's triggers on the totals every instance contributed to. A firing trigger moves the canary to
 *   0 % with a compare-and-set on the rollout's generation: exactly one instance wins and reports it
 *   (onRollback: event, ledger entry, metric); the others see the new generation at their next refresh.
 */
import type { RedisClient } from './client.js';
import type { RolloutArm, RolloutState, RolloutTable } from '../../engine/rollout/arm.js';
import { firingTrigger, EMPTY_COUNTS, type ArmCounts, type CompiledTrigger, type TriggerFiring } from '../../engine/rollout/triggers.js';
import { RedisRolloutStore, type CountsAdded } from './rollout-store.js';

export interface RolloutMonitorOptions {
  prefix?: string;
  /** Default trigger window (rollout.window_ms). */
  windowMs: number;
  /** Decisions an arm needs in a window before a trigger may judge it (rollout.min_samples). */
  minSamples: number;
  refreshMs?: number;
  flushMs?: number;
  /** The canary version's compiled rollback triggers (from the blueprint set in force). */
  triggersFor: (state: RolloutState) => readonly CompiledTrigger[];
  onRollback?: (r: { state: RolloutState; firing: TriggerFiring; generation: number; atMs: number }) => void | Promise<void>;
  onError?: (e: unknown) => void;
  nowMs?: () => number;
}

interface Pending {
  name: string;
  generation: number;
  windowMs: number;
  windowStart: number;
  byArm: Map<RolloutArm, ArmCounts>;
}

export class RolloutMonitor {
  readonly store: RedisRolloutStore;
  private current: Map<string, RolloutState> = new Map();
  private pending = new Map<string, Pending>();
  private timers: NodeJS.Timeout[] = [];
  private flushing: Promise<void> | undefined;

  constructor(redis: RedisClient, private readonly o: RolloutMonitorOptions) {
    this.store = new RedisRolloutStore(redis, o.prefix ?? '');
  }

  table(): RolloutTable {
    return this.current;
  }

  async refresh(): Promise<void> {
    this.current = new Map((await this.store.list()).map((s) => [s.name, s]));
  }

  async start(): Promise<void> {
    await this.refresh();
    const safe = (f: () => Promise<void>) => () => void f().catch((e: unknown) => this.o.onError?.(e));
    this.timers.push(setInterval(safe(() => this.refresh()), this.o.refreshMs ?? 1000).unref());
    this.timers.push(setInterval(safe(() => this.flush()), this.o.flushMs ?? 200).unref());
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.flush().catch((e: unknown) => this.o.onError?.(e));
  }

  private windowsOf(state: RolloutState): number[] {
    const ws = new Set([this.o.windowMs]);
    for (const t of this.o.triggersFor(state)) if (t.windowMs) ws.add(t.windowMs);
    return [...ws];
  }

  /** A decision of an agent in `arm` of rollout `name` at event time `atMs`. */
  record(name: string, arm: RolloutArm, atMs: number, counts: ArmCounts): void {
    const state = this.current.get(name);
    if (!state || state.percent <= 0) return;
    for (const windowMs of this.windowsOf(state)) {
      const windowStart = Math.floor(atMs / windowMs) * windowMs;
      const key = this.store.counterKey(name, state.generation, windowMs, windowStart);
      let p = this.pending.get(key);
      if (!p) this.pending.set(key, (p = { name, generation: state.generation, windowMs, windowStart, byArm: new Map() }));
      this.merge(p, arm, counts);
    }
  }

  private merge(p: Pending, arm: RolloutArm, counts: ArmCounts): void {
    const have = p.byArm.get(arm);
    if (!have) p.byArm.set(arm, { ...counts });
    else for (const f of Object.keys(counts) as (keyof ArmCounts)[]) have[f] += counts[f];
  }

  /** Sends the local counts and evaluates the triggers; concurrent calls share one run. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const adds = new Map([...batch].map(([k, p]) => [k, [...p.byArm].map(([arm, counts]) => ({ arm, counts }))]));
    // Not lost: the counts of a key whose add failed are merged back for the next flush — only those: the other
    // keys were applied (a partly applied key's pipeline may count a few decisions twice).
    const mergeBack = (keys: Iterable<string>) => {
      for (const k of keys) {
        const p = batch.get(k)!;
        const now = this.pending.get(k);
        if (!now) this.pending.set(k, p);
        else for (const [arm, c] of p.byArm) this.merge(now, arm, c);
      }
    };
    let added: CountsAdded;
    try {
      added = await this.store.addCounts(adds, Math.max(...[...batch.values()].map((p) => p.windowMs)) * 2);
    } catch (e) {
      mergeBack(batch.keys());
      throw e;
    }
    mergeBack(added.failed.keys());
    const totals = added.totals;
    const fired = new Set<string>();
    let lost = false;
    for (const [key, p] of batch) {
      const state = this.current.get(p.name);
      if (!state || state.generation !== p.generation || fired.has(p.name) || added.failed.has(key)) continue;
      const triggers = this.o.triggersFor(state).filter((t) => (t.windowMs ?? this.o.windowMs) === p.windowMs);
      if (triggers.length === 0) continue;
      const t = totals.get(key) ?? {};
      const firing = firingTrigger(triggers, t.canary ?? EMPTY_COUNTS, t.stable ?? EMPTY_COUNTS, this.o.minSamples);
      if (!firing) continue;
      fired.add(p.name);
      const atMs = (this.o.nowMs ?? Date.now)();
      const res = await this.store.rollback(p.name, p.generation, atMs, `rollback: ${firing.trigger.source}`);
      if (!res.won) {
        // Someone moved the rollout first (another instance's rollback, or an operator's new versions or
        // percent): what it is now is in Redis, not "ours at 0 %" — re-read it below rather than guess.
        lost = true;
        continue;
      }
      this.current.set(p.name, { ...state, percent: 0, generation: res.generation, updatedAtMs: atMs, reason: `rollback: ${firing.trigger.source}` });
      await this.o.onRollback?.({ state, firing, generation: res.generation, atMs });
    }
    if (lost) await this.refresh();
    // The applied keys' triggers were evaluated; the failure is still the caller's to see (logged, retried next flush).
    const firstFailure = added.failed.values().next();
    if (!firstFailure.done) throw firstFailure.value;
  }
}
