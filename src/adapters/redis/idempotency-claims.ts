/**
 * The HTTP ingress's per-event idempotency claims (docs/http.md "Idempotency", docs/spec-decisions.md D39). A key
 * has two states: *pending* — claimed, its send in flight — in one sorted set per agent
 * (`<prefix>http:idem:{<agent>}:pending`, score = Redis' time of the claim in µs), owned by the claim whose caller-made
 * id the agent's claims set (`…:claims`) maps to that time, and *done* — produced — in one Redis set per agent and
 * time bucket (`<prefix>http:idem:{<agent>}:<bucket>`, a bucket as long as the window).
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
import { randomBytes } from 'node:crypto';
import type { RedisClient } from './client.js';

/** How long a pending claim holds by default: twice the ingress's send timeout (ingest-batch INGEST_SEND_TIMEOUT_MS). */
export const PENDING_STALE_MS = 40_000;

/**
 * The bucket is Redis' own clock (TIME), not the caller's: every key of an agent lives on one master, so ingress
 * replicas whose clocks differ still agree (with each replica's clock, a replica behind by δ would check the two
 * buckets before the current one for δ after a turn). The caller names the sets around its own estimate b of the
 * bucket, so the scripts touch declared keys only (a Redis Cluster requirement): KEYS = the sets of buckets
 * b-3 … b+1, the pending set, then the claims set; Redis' bucket is clamped to b-1 … b+1. ARGV: b, the window (s),
 * a fixed bucket ('' = Redis' clock; tests pass their own), the stale bound (ms), the caller's claim id, then the
 * keys. Answer: one character per key: 1 claimed by this call, 0 done or the same as an earlier key of the call,
 * 2 pending under another claim younger than the bound.
 *
 * The script is safe to run twice (D39): ioredis re-sends a command left unanswered by a dropped connection, and a
 * Cluster client retries after a failover, so the same claim may run again after its first run took the keys. The
 * claims set (member = claim id, score = Redis' time of its first run in µs, the score of its pending entries; a
 * script runs for microseconds, so no two claims on a master share a time) tells the second run which entries are
 * its own: a key pending at that time counts as claimed by this call, and keys it claims anew get the same time.
 * Both sets are pruned by the same stale bound and expire together.
 */
export const CLAIM_SCRIPT = `local b, w, stale, id = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]), ARGV[5]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local sb
if ARGV[3] ~= '' then sb = tonumber(ARGV[3]) else sb = math.floor(tonumber(t[1]) / w) end
if sb > b + 1 then sb = b + 1 elseif sb < b - 1 then sb = b - 1 end
local i = sb - b + 4
local cur, prev, pend, own = KEYS[i], KEYS[i - 1], KEYS[6], KEYS[7]
local cut = '(' .. string.format('%d', now - stale * 1000)
redis.call('ZREMRANGEBYSCORE', pend, '-inf', cut)
redis.call('ZREMRANGEBYSCORE', own, '-inf', cut)
local first = redis.call('ZSCORE', own, id)
local at = first and tonumber(first) or now
local uss = string.format('%d', at)
local hasPend = redis.call('EXISTS', pend) == 1
local out, fresh, seen = {}, {}, {}
for s = 6, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  local inPrev = redis.call('SMISMEMBER', prev, unpack(ARGV, s, e))
  local inCur = redis.call('SMISMEMBER', cur, unpack(ARGV, s, e))
  local inPend = hasPend and redis.call('ZMSCORE', pend, unpack(ARGV, s, e)) or nil
  for j = s, e do
    local k, p = ARGV[j], inPend and inPend[j - s + 1]
    if inPrev[j - s + 1] == 1 or inCur[j - s + 1] == 1 or seen[k] then out[j - 5] = '0'
    elseif p and not (first and tonumber(p) == at) then out[j - 5] = '2'
    else
      seen[k] = true; out[j - 5] = '1'
      if not p then fresh[#fresh + 1] = uss; fresh[#fresh + 1] = k end
    end
  end
end
if #fresh > 0 then
  for s = 1, #fresh, 1000 do redis.call('ZADD', pend, unpack(fresh, s, math.min(s + 999, #fresh))) end
  redis.call('PEXPIRE', pend, stale)
  if not first then redis.call('ZADD', own, uss, id) end
  redis.call('PEXPIRE', own, stale)
end
return table.concat(out)`;

/**
 * Produced: KEYS and b, w, the fixed bucket as for CLAIM_SCRIPT; ARGV[4] the claim id; from 5: the keys. Adds them
 * to Redis' current bucket's set (recognised as done for one to two windows from now) and removes them from the
 * pending set — also a pending entry another claim took after this one went stale: the event is produced, so done
 * wins. The claim's record goes once none of its entries is pending (a release of its other keys may follow).
 */
export const FINALISE_SCRIPT = `local b, w, id = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local sb
if ARGV[3] ~= '' then sb = tonumber(ARGV[3]) else sb = math.floor(tonumber(redis.call('TIME')[1]) / w) end
if sb > b + 1 then sb = b + 1 elseif sb < b - 1 then sb = b - 1 end
local i = sb - b + 4
local cur, old, pend, own = KEYS[i], KEYS[i - 2], KEYS[6], KEYS[7]
if redis.call('EXISTS', cur) == 0 then redis.call('UNLINK', old) end
for s = 5, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  redis.call('SADD', cur, unpack(ARGV, s, e))
  redis.call('ZREM', pend, unpack(ARGV, s, e))
end
redis.call('EXPIREAT', cur, string.format('%d', (sb + 3) * w))
local at = redis.call('ZSCORE', own, id)
if at and redis.call('ZCOUNT', pend, at, at) == 0 then redis.call('ZREM', own, id) end
return 0`;

/**
 * Not produced: KEYS the pending set and the claims set; ARGV: the claim id, then the keys. Removes only entries of
 * that claim (pending at its time) — a key another request claimed after this claim went stale stays its — and the
 * claim's record once none of its entries is pending.
 */
export const RELEASE_SCRIPT = `local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not at then return 0 end
local atn = tonumber(at)
for s = 2, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  local sc = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, s, e))
  local mine = {}
  for j = s, e do if sc[j - s + 1] and tonumber(sc[j - s + 1]) == atn then mine[#mine + 1] = ARGV[j] end end
  if #mine > 0 then redis.call('ZREM', KEYS[1], unpack(mine)) end
end
if redis.call('ZCOUNT', KEYS[1], at, at) == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) end
return 0`;

/** A key's state at claim time: claimed by this call, done (a duplicate), or pending under another live claim. */
export type ClaimState = 'claimed' | 'done' | 'pending';

export interface BatchClaim {
  /** One per key, in order ('' names no key: always 'claimed'). */
  states: ClaimState[];
  /** The caller's claim id: finalise() and release() name it, so a release hands back only this claim's entries. */
  id: string;
}

/** A fresh claim id (random, 96 bits): names one batch's claim across a re-sent script call. */
export const newClaimId = (): string => randomBytes(12).toString('base64url');

export interface IdempotencyClaims {
  /**
   * Claims the agent's event keys as pending under `id` (default a fresh newClaimId()), in one round trip; the
   * call may run twice in Redis (a re-sent command) and answers the same.
   */
  claim(agentId: string, keys: readonly string[], id?: string): Promise<BatchClaim>;
  /** The keys' events were produced: done from now on (for one to two windows). */
  finalise(agentId: string, keys: readonly string[], id: string): Promise<void>;
  /**
   * The keys' events were not produced: hands back claim `id`'s pending entries, so a retry sends them (also
   * safe after a claim whose answer was lost: it removes nothing another claim holds).
   */
  release(agentId: string, keys: readonly string[], id: string): Promise<void>;
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
  /** KEYS for the claim and finalise scripts: the sets of b-3 … b+1, the pending set and the claims set. */
  const keysAround = (k: string, b: number) => [7, k + (b - 3), k + (b - 2), k + (b - 1), k + b, k + (b + 1), k + 'pending', k + 'claims'] as const;
  return {
    async claim(agentId, keys, id = newClaimId()) {
      const states = new Array<ClaimState>(keys.length).fill('claimed');
      const named: number[] = [];
      for (let i = 0; i < keys.length; i++) if (keys[i] !== '') named.push(i);
      if (named.length === 0) return { states, id };
      const b = bucketOf();
      const args = named.length === keys.length ? keys : named.map((i) => keys[i]);
      const got = String(await r.stewardIdemClaim(...keysAround(base(agentId), b), b, w, fixed ? b : '', stale, id, ...args));
      for (let j = 0; j < named.length; j++) states[named[j]] = STATE[got[j]];
      return { states, id };
    },
    async finalise(agentId, keys, id) {
      const named = keys.filter((x) => x !== '');
      if (named.length === 0) return;
      const b = bucketOf();
      await r.stewardIdemFinalise(...keysAround(base(agentId), b), b, w, fixed ? b : '', id, ...named);
    },
    async release(agentId, keys, id) {
      const named = keys.filter((x) => x !== '');
      if (named.length === 0) return;
      // Pending entries are not bucketed: a release after the bucket turned finds them all the same.
      const k = base(agentId);
      await r.stewardIdemRelease(2, k + 'pending', k + 'claims', id, ...named);
    },
  };
}
