/**
 * The HTTP ingress's per-event idempotency claims (docs/http.md "Idempotency", docs/spec-decisions.md D39):
 * one Redis set per agent and time bucket (`<prefix>http:idem:{<agent>}:<bucket>`, a bucket as long as the
 * window), the event keys its members. A claim checks the current and the previous bucket's set and adds the
 * keys neither holds, for a whole batch in one script call of a few commands (SMISMEMBER, SADD): the per-key
 * `SET NX EX` it replaces made one command, one top-level key and one expiry entry per event (~3.2 µs of Redis
 * CPU a key; bench/ingress/claims.ts measures both). A key is recognised for at least one window after its claim
 * and at most two. Both buckets of an agent share its hash tag, so the script runs on a Redis Cluster.
 *
 * A busy agent's bucket is a big set, and Redis frees an expiring key on its main thread: the first claim in a
 * new bucket UNLINKs the agent's set from two buckets back (freed off the main thread), which its TTL — one window
 * past the time it stops being consulted — would otherwise expire. Only the sets of an agent that sends nothing for
 * a whole window expire by TTL (docs/http.md: `lazyfree-lazy-expire yes` frees those off the main thread too).
 */
import type { RedisClient } from './client.js';

/**
 * The bucket is Redis' own clock (TIME), not the caller's: every set of an agent lives on one master, so ingress
 * replicas whose clocks differ still claim into the same bucket (with each replica's clock, a replica behind by δ
 * would check the two buckets before the current one for δ after a turn and claim again what another replica
 * claimed). The caller names the sets around its own estimate b of the bucket, so the script touches declared keys
 * only (a Redis Cluster requirement): KEYS = the sets of buckets b-3 … b+1; Redis' bucket is clamped to b-1 … b+1
 * (clocks a whole window apart are not expected). ARGV: b, the window (s), a fixed bucket ('' = Redis' clock; tests
 * pass their own), then the keys. One character per key back: 1 where this call claimed it, 0 where the current or
 * previous bucket held it or an earlier key of the same call was the same.
 */
export const CLAIM_SCRIPT = `local b, w = tonumber(ARGV[1]), tonumber(ARGV[2])
local sb
if ARGV[3] ~= '' then sb = tonumber(ARGV[3]) else sb = math.floor(tonumber(redis.call('TIME')[1]) / w) end
if sb > b + 1 then sb = b + 1 elseif sb < b - 1 then sb = b - 1 end
local i = sb - b + 4
local cur, prev, old = KEYS[i], KEYS[i - 1], KEYS[i - 2]
local out, fresh, seen = {}, {}, {}
for s = 4, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  local inPrev = redis.call('SMISMEMBER', prev, unpack(ARGV, s, e))
  local inCur = redis.call('SMISMEMBER', cur, unpack(ARGV, s, e))
  for j = s, e do
    local k = ARGV[j]
    if inPrev[j - s + 1] == 1 or inCur[j - s + 1] == 1 or seen[k] then out[j - 3] = '0'
    else seen[k] = true; fresh[#fresh + 1] = k; out[j - 3] = '1' end
  end
end
if #fresh > 0 then
  if redis.call('EXISTS', cur) == 0 then redis.call('UNLINK', old) end
  for s = 1, #fresh, 1000 do redis.call('SADD', cur, unpack(fresh, s, math.min(s + 999, #fresh))) end
  redis.call('EXPIREAT', cur, string.format('%d', (sb + 3) * w))
end
return table.concat(out)`;

/**
 * KEYS: the sets of buckets b-2 … b+1 around the caller's bucket b; ARGV: the keys whose claims are handed back.
 * The claim went to Redis' bucket at claim time, within one bucket of the caller's (see CLAIM_SCRIPT), also when
 * the bucket turned since: removed from all four, so a released key is claimed in none.
 */
export const RELEASE_SCRIPT = `for s = 1, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  for i = 1, #KEYS do redis.call('SREM', KEYS[i], unpack(ARGV, s, e)) end
end
return 0`;

export interface IdempotencyClaims {
  /** Claims the agent's event keys (true: claimed by this call; false: a duplicate). Empty keys are not claimed. */
  claim(agentId: string, keys: readonly string[]): Promise<boolean[]>;
  /** Hands back claims whose events were not produced, so a retry sends them. */
  release(agentId: string, keys: readonly string[]): Promise<void>;
}

type Scripted = { stewardIdemClaim(...args: (string | number)[]): Promise<unknown>; stewardIdemRelease(...args: (string | number)[]): Promise<unknown> };

/**
 * Claims on `redis` (a single Redis or a Cluster; give it a connection without auto-pipelining, so that a claim is
 * written when it is made and overlaps the batch's mapping, D39). `windowSeconds`: the bucket length.
 */
export function redisIdempotencyClaims(
  redis: RedisClient,
  o: { prefix: string; windowSeconds: number; now?: () => number; /** 'caller': the bucket from `now` (tests of bucket turns); default Redis' clock. */ bucketClock?: 'redis' | 'caller' },
): IdempotencyClaims {
  redis.defineCommand('stewardIdemClaim', { lua: CLAIM_SCRIPT });
  redis.defineCommand('stewardIdemRelease', { lua: RELEASE_SCRIPT });
  const r = redis as unknown as Scripted;
  const now = o.now ?? Date.now;
  const w = o.windowSeconds;
  // The agent's hash tag, made once per agent: every bucket of an agent lives in one slot.
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
  return {
    async claim(agentId, keys) {
      const out = new Array<boolean>(keys.length).fill(true);
      const named: number[] = [];
      for (let i = 0; i < keys.length; i++) if (keys[i] !== '') named.push(i);
      if (named.length === 0) return out;
      const b = bucketOf();
      const k = base(agentId);
      const args = named.length === keys.length ? keys : named.map((i) => keys[i]);
      const got = String(await r.stewardIdemClaim(5, k + (b - 3), k + (b - 2), k + (b - 1), k + b, k + (b + 1), b, w, fixed ? b : '', ...args));
      for (let j = 0; j < named.length; j++) out[named[j]] = got.charCodeAt(j) === 49;
      return out;
    },
    async release(agentId, keys) {
      const named = keys.filter((x) => x !== '');
      if (named.length === 0) return;
      // The bucket may have turned since the claim, and the claim used Redis' clock: every set it can be in.
      const b = bucketOf();
      const k = base(agentId);
      await r.stewardIdemRelease(4, k + (b - 2), k + (b - 1), k + b, k + (b + 1), ...named);
    },
  };
}
