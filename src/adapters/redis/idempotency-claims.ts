/**
 * The HTTP ingress's per-event idempotency claims (docs/http.md "Idempotency", docs/spec-decisions.md D39). A key
 * has two states: *pending* — claimed, its send in flight — in one sorted set per agent
 * (`<prefix>http:idem:{<agent>}:pending`, score = Redis' time of the claim in µs, which names the claim), and *done* — produced — in one
 * Redis set per agent and time bucket (`<prefix>http:idem:{<agent>}:<bucket>`, a bucket as long as the window).
 * A claim is one script call per batch: keys done (in the current or the previous bucket's set) are duplicates,
 * keys pending and younger than the stale bound are `pending` (the batch is answered 503, so its client retries
 * once they are done or released), and the others are claimed pending. After an acknowledged send the keys are
 * finalised (added to the bucket's set, removed from the pending set); after a failed one released. A pending
 * entry older than the bound (an ingress that crashed between claim and finalise) counts as unclaimed: its event
 * may be produced twice when the crash came after the send (at-least-once, D39). All of an agent's keys share its
 * hash tag, so the scripts run on a Redis Cluster.
 *
 * A busy agent's bucket is a big set, and Redis frees an expiring key on its main thread: the first finalise in a
 * new bucket UNLINKs the agent's set from two buckets back (freed off the main thread), which its TTL — one window
 * past the time it stops being consulted — would otherwise expire. Only the sets of an agent that sends nothing for
 * a whole window expire by TTL (docs/http.md: `lazyfree-lazy-expire yes` frees those off the main thread too).
 */
import type { RedisClient } from './client.js';

/** How long a pending claim holds by default: twice the ingress's send timeout (ingest-batch INGEST_SEND_TIMEOUT_MS). */
export const PENDING_STALE_MS = 40_000;

/**
 * The bucket is Redis' own clock (TIME), not the caller's: every key of an agent lives on one master, so ingress
 * replicas whose clocks differ still agree (with each replica's clock, a replica behind by δ would check the two
 * buckets before the current one for δ after a turn). The caller names the sets around its own estimate b of the
 * bucket, so the scripts touch declared keys only (a Redis Cluster requirement): KEYS = the sets of buckets
 * b-3 … b+1, then the pending set; Redis' bucket is clamped to b-1 … b+1. ARGV: b, the window (s), a fixed bucket
 * ('' = Redis' clock; tests pass their own), the stale bound (ms), then the keys. Answer: Redis' time (µs) of the
 * claim — a script runs for microseconds, so no two claims on a master share it — then ':' and one character per
 * key: 1 claimed by this call, 0 done or the same as an earlier key of the call, 2 pending under a claim younger
 * than the bound.
 */
export const CLAIM_SCRIPT = `local b, w, stale = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local uss = string.format('%d', us)
local sb
if ARGV[3] ~= '' then sb = tonumber(ARGV[3]) else sb = math.floor(tonumber(t[1]) / w) end
if sb > b + 1 then sb = b + 1 elseif sb < b - 1 then sb = b - 1 end
local i = sb - b + 4
local cur, prev, pend = KEYS[i], KEYS[i - 1], KEYS[6]
redis.call('ZREMRANGEBYSCORE', pend, '-inf', '(' .. string.format('%d', us - stale * 1000))
local hasPend = redis.call('EXISTS', pend) == 1
local out, fresh, seen = {}, {}, {}
for s = 5, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  local inPrev = redis.call('SMISMEMBER', prev, unpack(ARGV, s, e))
  local inCur = redis.call('SMISMEMBER', cur, unpack(ARGV, s, e))
  local inPend = hasPend and redis.call('ZMSCORE', pend, unpack(ARGV, s, e)) or nil
  for j = s, e do
    local k = ARGV[j]
    if inPrev[j - s + 1] == 1 or inCur[j - s + 1] == 1 or seen[k] then out[j - 4] = '0'
    elseif inPend and inPend[j - s + 1] then out[j - 4] = '2'
    else seen[k] = true; fresh[#fresh + 1] = uss; fresh[#fresh + 1] = k; out[j - 4] = '1' end
  end
end
if #fresh > 0 then
  for s = 1, #fresh, 1000 do redis.call('ZADD', pend, unpack(fresh, s, math.min(s + 999, #fresh))) end
  redis.call('PEXPIRE', pend, stale)
end
return uss .. ':' .. table.concat(out)`;

/**
 * Produced: KEYS and b, w, the fixed bucket as for CLAIM_SCRIPT; ARGV from 4: the keys. Adds them to Redis' current
 * bucket's set (recognised as done for one to two windows from now) and removes them from the pending set — also a
 * pending entry another claim took after this one went stale: the event is produced, so done wins.
 */
export const FINALISE_SCRIPT = `local b, w = tonumber(ARGV[1]), tonumber(ARGV[2])
local sb
if ARGV[3] ~= '' then sb = tonumber(ARGV[3]) else sb = math.floor(tonumber(redis.call('TIME')[1]) / w) end
if sb > b + 1 then sb = b + 1 elseif sb < b - 1 then sb = b - 1 end
local i = sb - b + 4
local cur, old, pend = KEYS[i], KEYS[i - 2], KEYS[6]
if redis.call('EXISTS', cur) == 0 then redis.call('UNLINK', old) end
for s = 4, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  redis.call('SADD', cur, unpack(ARGV, s, e))
  redis.call('ZREM', pend, unpack(ARGV, s, e))
end
redis.call('EXPIREAT', cur, string.format('%d', (sb + 3) * w))
return 0`;

/**
 * Not produced: KEYS[1] the pending set; ARGV: the claim's time (µs, as CLAIM_SCRIPT answered), then the keys.
 * Removes only entries of that claim — a key another request claimed after this claim went stale stays its.
 */
export const RELEASE_SCRIPT = `local at = tonumber(ARGV[1])
for s = 2, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  local sc = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, s, e))
  local mine = {}
  for j = s, e do if sc[j - s + 1] and tonumber(sc[j - s + 1]) == at then mine[#mine + 1] = ARGV[j] end end
  if #mine > 0 then redis.call('ZREM', KEYS[1], unpack(mine)) end
end
return 0`;

/** A key's state at claim time: claimed by this call, done (a duplicate), or pending under another live claim. */
export type ClaimState = 'claimed' | 'done' | 'pending';

export interface BatchClaim {
  /** One per key, in order ('' names no key: always 'claimed'). */
  states: ClaimState[];
  /** Redis' time of the claim (µs): release() names it, so it hands back only this claim's entries. */
  at: string;
}

export interface IdempotencyClaims {
  /** Claims the agent's event keys as pending, in one round trip. */
  claim(agentId: string, keys: readonly string[]): Promise<BatchClaim>;
  /** The keys' events were produced: done from now on (for one to two windows). */
  finalise(agentId: string, keys: readonly string[]): Promise<void>;
  /** The keys' events were not produced: hands back this claim's pending entries, so a retry sends them. */
  release(agentId: string, keys: readonly string[], at: string): Promise<void>;
}

type Scripted = Record<'stewardIdemClaim' | 'stewardIdemFinalise' | 'stewardIdemRelease', (...args: (string | number)[]) => Promise<unknown>>;
const STATE: Record<string, ClaimState> = { '0': 'done', '1': 'claimed', '2': 'pending' };

/**
 * Claims on `redis` (a single Redis or a Cluster; give it a connection without auto-pipelining, so that a claim is
 * written when it is made and overlaps the batch's mapping, D39). `windowSeconds`: the bucket length;
 * `pendingStaleMs`: how long a pending claim holds (default PENDING_STALE_MS).
 */
export function redisIdempotencyClaims(
  redis: RedisClient,
  o: {
    prefix: string;
    windowSeconds: number;
    pendingStaleMs?: number;
    now?: () => number;
    /** 'caller': the bucket from `now` (tests of bucket turns); default Redis' clock. Pending times are Redis' clock always. */
    bucketClock?: 'redis' | 'caller';
  },
): IdempotencyClaims {
  redis.defineCommand('stewardIdemClaim', { lua: CLAIM_SCRIPT });
  redis.defineCommand('stewardIdemFinalise', { lua: FINALISE_SCRIPT });
  redis.defineCommand('stewardIdemRelease', { lua: RELEASE_SCRIPT });
  const r = redis as unknown as Scripted;
  const now = o.now ?? Date.now;
  const w = o.windowSeconds;
  const stale = o.pendingStaleMs ?? PENDING_STALE_MS;
  // The agent's hash tag, made once per agent: every key of an agent lives in one slot.
  const tags = new Map<string, string>();
  const base = (agentId: string) => {
    let b = tags.get(agentId);
    if (b === undefined) {
      b = `${o.prefix}http:idem:{${encodeURIComponent(agentId)}}:`;
      if (tags.size > 10_000) tags.clear();
      tags.set(agentId, b);
    }
    return b;
  };
  const bucketOf = () => Math.floor(now() / 1000 / w);
  const fixed = o.bucketClock === 'caller';
  /** KEYS for the claim and finalise scripts: the sets of b-3 … b+1 and the pending set. */
  const keysAround = (k: string, b: number) => [6, k + (b - 3), k + (b - 2), k + (b - 1), k + b, k + (b + 1), k + 'pending'] as const;
  return {
    async claim(agentId, keys) {
      const states = new Array<ClaimState>(keys.length).fill('claimed');
      const named: number[] = [];
      for (let i = 0; i < keys.length; i++) if (keys[i] !== '') named.push(i);
      if (named.length === 0) return { states, at: '0' };
      const b = bucketOf();
      const args = named.length === keys.length ? keys : named.map((i) => keys[i]);
      const got = String(await r.stewardIdemClaim(...keysAround(base(agentId), b), b, w, fixed ? b : '', stale, ...args));
      const colon = got.indexOf(':');
      for (let j = 0; j < named.length; j++) states[named[j]] = STATE[got[colon + 1 + j]];
      return { states, at: got.slice(0, colon) };
    },
    async finalise(agentId, keys) {
      const named = keys.filter((x) => x !== '');
      if (named.length === 0) return;
      const b = bucketOf();
      await r.stewardIdemFinalise(...keysAround(base(agentId), b), b, w, fixed ? b : '', ...named);
    },
    async release(agentId, keys, at) {
      const named = keys.filter((x) => x !== '');
      if (named.length === 0) return;
      // Pending entries are not bucketed: a release after the bucket turned finds them all the same.
      await r.stewardIdemRelease(1, base(agentId) + 'pending', at, ...named);
    },
  };
}
