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
 * KEYS: the current bucket's set, the previous one's, the one before (unlinked when the current set is new).
 * ARGV: the current set's expiry (unix seconds), then the keys. One character per key back: 1 where this call
 * claimed it, 0 where either bucket held it or an earlier key of the same call was the same.
 */
export const CLAIM_SCRIPT = `local cur, prev = KEYS[1], KEYS[2]
local out, fresh, seen = {}, {}, {}
for s = 2, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  local inPrev = redis.call('SMISMEMBER', prev, unpack(ARGV, s, e))
  local inCur = redis.call('SMISMEMBER', cur, unpack(ARGV, s, e))
  for i = s, e do
    local k = ARGV[i]
    if inPrev[i - s + 1] == 1 or inCur[i - s + 1] == 1 or seen[k] then out[i - 1] = '0'
    else seen[k] = true; fresh[#fresh + 1] = k; out[i - 1] = '1' end
  end
end
if #fresh > 0 then
  if redis.call('EXISTS', cur) == 0 then redis.call('UNLINK', KEYS[3]) end
  for s = 1, #fresh, 1000 do redis.call('SADD', cur, unpack(fresh, s, math.min(s + 999, #fresh))) end
  redis.call('EXPIREAT', cur, ARGV[1])
end
return table.concat(out)`;

/** KEYS: the current and the previous bucket's set; ARGV: the keys whose claims are handed back. */
export const RELEASE_SCRIPT = `for s = 1, #ARGV, 1000 do
  local e = math.min(s + 999, #ARGV)
  redis.call('SREM', KEYS[1], unpack(ARGV, s, e))
  redis.call('SREM', KEYS[2], unpack(ARGV, s, e))
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
export function redisIdempotencyClaims(redis: RedisClient, o: { prefix: string; windowSeconds: number; now?: () => number }): IdempotencyClaims {
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
  return {
    async claim(agentId, keys) {
      const out = new Array<boolean>(keys.length).fill(true);
      const named: number[] = [];
      for (let i = 0; i < keys.length; i++) if (keys[i] !== '') named.push(i);
      if (named.length === 0) return out;
      const b = bucketOf();
      const k = base(agentId);
      const args = named.length === keys.length ? keys : named.map((i) => keys[i]);
      const got = String(await r.stewardIdemClaim(3, k + b, k + (b - 1), k + (b - 2), (b + 3) * w, ...args));
      for (let j = 0; j < named.length; j++) out[named[j]] = got.charCodeAt(j) === 49;
      return out;
    },
    async release(agentId, keys) {
      const named = keys.filter((x) => x !== '');
      if (named.length === 0) return;
      // The bucket may have turned since the claim: the key is in the current or the previous set.
      const b = bucketOf();
      const k = base(agentId);
      await r.stewardIdemRelease(2, k + b, k + (b - 1), ...named);
    },
  };
}
