/**
 * Redis-backed StateStore for the DSL (exceeds_rate, storage.get). Rate windows are sorted sets
 * (member = hitId, score = event time) updated by one Lua script, so concurrent Steward instances
 * count atomically and a redelivered trace (same hitId) is counted once.
 *
 * Hits issued in the same tick (the stage decides many agents concurrently) go to Redis as one script
 * call over all their keys, applied in call order, each key exactly as the single-key script does; one
 * key's failure fails only its own hit. One ioredis command per hit cost ~9-16 us of CPU in this process
 * (bench/pipeline), most of a decision's Redis cost. The keys of one call may span hash slots: single
 * Redis (or a proxy that routes scripts whole), as before, not Redis Cluster.
 */
import type { Redis } from 'ioredis';
import { StewardError } from '../../errors.js';
import { redisFailureKind } from './client.js';
import type { StateStore } from '../../engine/types.js';

// KEYS[1] window zset; ARGV: now, window, hitId, keep (>= window). Prunes score <= now-keep, adds the hit
// once (NX), counts every hit after now-window (later event times included: concurrent instances deliver
// out of order, and a hit that arrived first must count for one that arrives later), and keeps the key
// alive for at least `keep`. `keep` exceeds the window by the event-time skew allowed in both directions:
// a hit stamped ahead of the others must not prune hits that traces stamped earlier still count.
const HIT_SCRIPT = `
local now = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
local keep = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - keep)
redis.call('ZADD', KEYS[1], 'NX', now, ARGV[3])
local n = redis.call('ZCOUNT', KEYS[1], '(' .. (now - win), '+inf')
local ttl = redis.call('PTTL', KEYS[1])
if ttl < keep then redis.call('PEXPIRE', KEYS[1], keep) end
return n
`;

// KEYS[i] window zset; ARGV[4i-3..4i]: now, window, hitId, keep — HIT_SCRIPT per key, in order. A key
// that fails (e.g. WRONGTYPE) answers 'ERR <message>' in its slot instead of failing the others.
const HITS_SCRIPT = `
local out = {}
for i = 1, #KEYS do
  local b = (i - 1) * 4
  local ok, n = pcall(function()
    local now = tonumber(ARGV[b + 1])
    local win = tonumber(ARGV[b + 2])
    local keep = tonumber(ARGV[b + 4])
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - keep)
    redis.call('ZADD', KEYS[i], 'NX', now, ARGV[b + 3])
    local c = redis.call('ZCOUNT', KEYS[i], '(' .. (now - win), '+inf')
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl < keep then redis.call('PEXPIRE', KEYS[i], keep) end
    return c
  end)
  if ok then out[i] = n else out[i] = 'ERR ' .. tostring(type(n) == 'table' and (n.err or n) or n) end
end
return out
`;

type RedisWithHit = Redis & {
  stewardRateHit2(key: string, now: number, win: number, hitId: string, keep: number): Promise<number>;
  stewardRateHits2(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<(number | string)[]>;
};

interface PendingHit {
  key: string;
  now: number;
  win: number;
  hitId: string;
  keep: number;
  resolve: (n: number) => void;
  reject: (e: unknown) => void;
}

export class RedisStateStore implements StateStore {
  private readonly redis: RedisWithHit;
  private readonly skewMs: number;

  /**
   * `prefix` isolates deployments (and tests); keys are `${prefix}rate:…` and `${prefix}kv:…`.
   * `maxEventTimeSkewMs`: how far a trace's event time may be from the clock (limits.max_event_time_skew_ms);
   * hits are kept twice that longer than their window. The cost is memory: a key holds its hits of window +
   * 2 x skew (a 1 s window at 50 hits/s and the default 5 min skew: ~30 000 members, ~3 MB), and a smaller cap
   * would let one trace stamped ahead prune the hits again. Null: event times are trusted as they come (a
   * rate limit on agent-stamped times is then only as good as those stamps).
   */
  constructor(
    redis: Redis,
    private readonly prefix = 'steward:',
    opts: { maxEventTimeSkewMs?: number | null } = {},
  ) {
    this.skewMs = Math.max(0, opts.maxEventTimeSkewMs ?? 0);
    if (typeof (redis as unknown as Partial<RedisWithHit>).stewardRateHit2 !== 'function') {
      redis.defineCommand('stewardRateHit2', { numberOfKeys: 1, lua: HIT_SCRIPT });
    }
    if (typeof (redis as unknown as Partial<RedisWithHit>).stewardRateHits2 !== 'function') {
      redis.defineCommand('stewardRateHits2', { lua: HITS_SCRIPT });
    }
    this.redis = redis as RedisWithHit;
  }

  private pending: PendingHit[] = [];

  /** Sends the hits queued in this tick: one script call (the single-key one for a lone hit). */
  private readonly flushHits = (): void => {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 1) {
      const h = batch[0]!;
      this.redis.stewardRateHit2(h.key, h.now, h.win, h.hitId, h.keep).then(
        (n) => h.resolve(Number(n)),
        (e: unknown) => h.reject(unavailable(e)),
      );
      return;
    }
    const args: (string | number)[] = new Array(batch.length * 5);
    for (let i = 0; i < batch.length; i++) {
      const h = batch[i]!;
      args[i] = h.key;
      const b = batch.length + i * 4;
      args[b] = h.now;
      args[b + 1] = h.win;
      args[b + 2] = h.hitId;
      args[b + 3] = h.keep;
    }
    this.redis.stewardRateHits2(batch.length, ...args).then(
      (res) => {
        for (let i = 0; i < batch.length; i++) {
          const v = res[i];
          if (typeof v === 'string' && v.startsWith('ERR')) batch[i]!.reject(unavailable(new Error(v.slice(4))));
          else batch[i]!.resolve(Number(v));
        }
      },
      (e: unknown) => {
        const err = unavailable(e);
        for (const h of batch) h.reject(err);
      },
    );
  };

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

  hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    if (!(windowMs > 0) || !Number.isFinite(nowMs)) return Promise.reject(new StewardError('STEWARD_DSL_EVAL', 'rate window must be positive and time finite'));
    return new Promise<number>((resolve, reject) => {
      const win = Math.ceil(windowMs);
      if (this.pending.push({ key: `${this.prefix}rate:${namespace}:${key}`, now: Math.floor(nowMs), win, hitId, keep: win + 2 * this.skewMs, resolve, reject }) === 1) process.nextTick(this.flushHits);
    });
  }
}

function unavailable(e: unknown): StewardError {
  // A script error or a write refused at maxmemory (OOM) is not retried for ever: it repeats until an operator
  // acts, so the check that needed the state fails closed as a dependency failure (spec-decisions D20).
  const kind = redisFailureKind(e);
  if (kind !== 'transient')
    return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis state store (${kind === 'oom' ? 'out of memory' : 'fails on every retry'}, not retried): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis state store: ${e instanceof Error ? e.message : String(e)}`, { retryable: true, cause: e });
}
