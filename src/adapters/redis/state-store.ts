/**
 * Redis-backed StateStore for the DSL (exceeds_rate, storage.get). Rate windows are sorted sets
 * (member = hitId, score = event time) updated by one Lua script, so concurrent Steward instances
 * count atomically and a redelivered trace (same hitId) is counted once.
 */
import type { Redis } from 'ioredis';
import { StewardError } from '../../errors.js';
import type { StateStore } from '../../engine/types.js';

// KEYS[1] window zset; ARGV: now, window, hitId. Prunes score <= now-window, adds the hit once (NX),
// counts every hit after now-window (later event times included: concurrent instances deliver out of
// order, and a hit that arrived first must count for one that arrives later), and keeps the key alive
// for at least one window.
const HIT_SCRIPT = `
local now = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
local cutoff = now - win
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
redis.call('ZADD', KEYS[1], 'NX', now, ARGV[3])
local n = redis.call('ZCOUNT', KEYS[1], '(' .. cutoff, '+inf')
local ttl = redis.call('PTTL', KEYS[1])
if ttl < win then redis.call('PEXPIRE', KEYS[1], win) end
return n
`;

type RedisWithHit = Redis & { stewardRateHit(key: string, now: number, win: number, hitId: string): Promise<number> };

export class RedisStateStore implements StateStore {
  private readonly redis: RedisWithHit;

  /** `prefix` isolates deployments (and tests); keys are `${prefix}rate:…` and `${prefix}kv:…`. */
  constructor(
    redis: Redis,
    private readonly prefix = 'steward:',
  ) {
    if (typeof (redis as unknown as Partial<RedisWithHit>).stewardRateHit !== 'function') {
      redis.defineCommand('stewardRateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    }
    this.redis = redis as RedisWithHit;
  }

  private kvKey(namespace: string, key: string): string {
    return `${this.prefix}kv:${namespace}:${key}`;
  }

  async get(namespace: string, key: string): Promise<unknown> {
    let raw: string | null;
    try {
      raw = await this.redis.get(this.kvKey(namespace, key));
    } catch (e) {
      throw unavailable(e);
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
      throw unavailable(e);
    }
  }

  async hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    if (!(windowMs > 0) || !Number.isFinite(nowMs)) throw new StewardError('STEWARD_DSL_EVAL', 'rate window must be positive and time finite');
    try {
      return Number(await this.redis.stewardRateHit(`${this.prefix}rate:${namespace}:${key}`, Math.floor(nowMs), Math.ceil(windowMs), hitId));
    } catch (e) {
      throw unavailable(e);
    }
  }
}

function unavailable(e: unknown): StewardError {
  return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis state store: ${e instanceof Error ? e.message : String(e)}`, { retryable: true, cause: e });
}
