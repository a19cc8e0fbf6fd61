/**
 * Redis-backed StateStore for the DSL (exceeds_rate, storage.get). Rate windows are sorted sets
 * (member = hitId, score = event time) updated by one Lua script, so concurrent Steward instances
 * count atomically and a redelivered trace (same hitId) is counted once.
 *
 * Hits go through RedisStateRounds: those issued in the same tick (the stage decides many agents concurrently)
 * leave as one script call per hash slot, applied in call order, each key exactly as the single-key script
 * does; one key's failure fails only its own hit. Rate-window keys carry the agent's hash tag
 * (`rate:{tenant:agent}:…`, the tag of its trust-debt hash: spec-decisions D28), so on Redis Cluster an agent's
 * hits and trust-debt read share one slot and one call.
 */
import type { StateStore } from '../../engine/types.js';
import { StewardError } from '../../errors.js';
import type { RedisClient } from './client.js';
import { RedisStateRounds, stateUnavailable } from './state-rounds.js';

export class RedisStateStore implements StateStore {
  private readonly redis: RedisClient;
  private readonly skewMs: number;
  readonly rounds: RedisStateRounds;

  /**
   * `prefix` isolates deployments (and tests); keys are `${prefix}rate:{tag}:…` and `${prefix}kv:…`.
   * `maxEventTimeSkewMs`: how far a trace's event time may be from the clock (limits.max_event_time_skew_ms);
   * hits are kept twice that longer than their window. The cost is memory: a key holds its hits of window +
   * 2 x skew (a 1 s window at 50 hits/s and the default 5 min skew: ~30 000 members, ~3 MB), and a smaller cap
   * would let one trace stamped ahead prune the hits again. Null: event times are trusted as they come (a
   * rate limit on agent-stamped times is then only as good as those stamps).
   * `rounds`: share one with the trust-debt store so an agent's reads and hits of a turn go in one call.
   */
  constructor(
    redis: RedisClient,
    private readonly prefix = 'steward:',
    opts: { maxEventTimeSkewMs?: number | null; rounds?: RedisStateRounds } = {},
  ) {
    this.skewMs = Math.max(0, opts.maxEventTimeSkewMs ?? 0);
    this.redis = redis;
    this.rounds = opts.rounds ?? new RedisStateRounds(redis);
  }

  /** The window key of `key` in `namespace` (the engine's `tenant:agent` namespace, tagged like the agent's trust-debt hash). */
  rateKey(namespace: string, key: string): string {
    let tag = this.tags.get(namespace);
    if (tag === undefined) {
      // One namespace per agent: split/decode/encode per hit was ~0.3 us of every decision.
      if (this.tags.size >= 10_000) this.tags.clear();
      this.tags.set(namespace, (tag = namespaceTag(namespace)));
    }
    return `${this.prefix}rate:{${tag}}:${key}`;
  }
  private readonly tags = new Map<string, string>();

  private kvKey(namespace: string, key: string): string {
    return `${this.prefix}kv:${namespace}:${key}`;
  }

  async get(namespace: string, key: string): Promise<unknown> {
    let raw: string | null;
    try {
      raw = await this.redis.get(this.kvKey(namespace, key));
    } catch (e) {
      throw stateUnavailable(e);
    }
    if (raw === null) return undefined;
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      // Values written by other tools as plain strings stay strings.
      return raw;
    }
  }

  async set(namespace: string, key: string, value: unknown): Promise<void> {
    try {
      await this.redis.set(this.kvKey(namespace, key), JSON.stringify(value));
    } catch (e) {
      throw stateUnavailable(e);
    }
  }

  hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    if (!(windowMs > 0) || !Number.isFinite(nowMs)) return Promise.reject(new StewardError('STEWARD_DSL_EVAL', 'rate window must be positive and time finite'));
    const win = Math.ceil(windowMs);
    return this.rounds.run({ kind: 'h', key: this.rateKey(namespace, key), now: Math.floor(nowMs), win, hitId, keep: win + 2 * this.skewMs }).then(Number);
  }
}

/**
 * The hash tag of a state namespace: for the engine's `tenant:agent` (each part with `%` and `:` escaped) the
 * trust-debt store's tag `encodeURIComponent(tenant):encodeURIComponent(agent)`, so an agent's windows live in
 * the slot of its debt; any other namespace, encoded whole.
 */
export function namespaceTag(namespace: string): string {
  const parts = namespace.split(':');
  if (parts.length === 2) {
    try {
      return `${encodeURIComponent(decodeURIComponent(parts[0]!))}:${encodeURIComponent(decodeURIComponent(parts[1]!))}`;
    } catch {
      // not the engine's escaping: encoded whole below
    }
  }
  return encodeURIComponent(namespace);
}
