/**
 * Redis cost of the HTTP ingress's per-event idempotency claims (docs/http.md "Benchmark"): the pending set and
 * bucket sets of src/adapters/redis/idempotency-claims.ts (a claim, then a finalise of the claimed keys) vs the
 * claim-only bucket-set script before issue #24's pending state and the per-key `SET NX EX` script before that
 * (both kept here as baselines), alternating, BENCH_CLAIM_ROUNDS rounds (default 3) of BENCH_CLAIM_N keys (default 100 000) in
 * batches of 100 (4 in flight), each batch claimed once fresh and once again (all duplicates, as a retried batch).
 * Redis CPU is read from INFO (used_cpu_user + used_cpu_sys, the whole server: run it on a Redis of its own for a
 * clean figure, BENCH_REDIS_URL; e.g. `redis-server --port 16999 --save '' &`), memory from used_memory.
 * BENCH_CLAIM_FREE=1 also times freeing a bucket set of 1 million keys (DEL, on the main thread, as an expiry is).
 * `flock /tmp/h/bench.lock npx tsx bench/ingress/claims.ts`
 */
import { createRedis } from '../../src/adapters/redis/client.js';
import { redisIdempotencyClaims } from '../../src/adapters/redis/idempotency-claims.js';
import { benchProcessEnv } from '../sink/services-env.js';
import { dropKeys } from './redis-keys.js';
import { pool } from './payloads.js';

const N = Number(process.env.BENCH_CLAIM_N ?? 100_000);
const ROUNDS = Number(process.env.BENCH_CLAIM_ROUNDS ?? 3);
const BATCH = 100;
const TTL = 86_400;

/** The bucket-set claim before the pending state (issue #24): SMISMEMBER of two buckets, SADD at claim time. */
const BUCKET_CLAIM_SCRIPT = `local b, w = tonumber(ARGV[1]), tonumber(ARGV[2])
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

/** The per-key claim before the bucket sets: SET NX EX of every key. */
const SET_NX_SCRIPT = `local out = {}
for i, k in ipairs(KEYS) do
  if redis.call('SET', k, '1', 'EX', ARGV[1], 'NX') then out[i] = '1' else out[i] = '0' end
end
return table.concat(out)`;

async function main(): Promise<void> {
  const url = process.env.BENCH_REDIS_URL ?? benchProcessEnv().REDIS_URL ?? 'redis://127.0.0.1:16379';
  const prefix = `bench-claims-${Date.now().toString(36)}:`;
  const redis = createRedis(url, { enableAutoPipelining: false });
  redis.defineCommand('benchSetNx', { lua: SET_NX_SCRIPT });
  redis.defineCommand('benchBucketClaim', { lua: BUCKET_CLAIM_SCRIPT });
  const bucketClaim = redis as unknown as { benchBucketClaim(...args: (string | number)[]): Promise<unknown> };
  const setNx = redis as unknown as { benchSetNx(n: number, ...args: string[]): Promise<unknown> };
  const sets = redisIdempotencyClaims(redis, { prefix, windowSeconds: TTL });
  const agent = 'bench-agent';
  const info = async () => {
    const text = await redis.info();
    const num = (k: string) => Number(new RegExp(`^${k}:(\\S+)`, 'm').exec(text)?.[1] ?? NaN);
    return { cpu: num('used_cpu_user') + num('used_cpu_sys'), mem: num('used_memory') };
  };
  // The same key text both ways: what the acgp client sends as idempotency_key (`<batch id>_<trace id>`).
  const keysOf = (tag: string, b: number) => Array.from({ length: BATCH }, (_, j) => `${tag}-b${b}_${'0123456789abcdef'.repeat(2)}-${j}`);
  const strategies = {
    'per-key SET NX EX (before)': async (tag: string, b: number) => {
      const keys = keysOf(tag, b);
      await setNx.benchSetNx(keys.length, ...keys.map((k) => `${prefix}http:idem:${agent}:${k}`), String(TTL));
    },
    'bucket sets, claim only (before #24)': async (tag: string, b: number) => {
      const bk = Math.floor(Date.now() / 1000 / TTL);
      const k = `${prefix}old:{${agent}}:`;
      await bucketClaim.benchBucketClaim(5, k + (bk - 3), k + (bk - 2), k + (bk - 1), k + bk, k + (bk + 1), bk, TTL, '', ...keysOf(tag, b));
    },
    'pending + bucket sets, claim then finalise (after #24)': async (tag: string, b: number) => {
      const keys = keysOf(tag, b);
      const c = await sets.claim(agent, keys);
      const fresh = keys.filter((_, i) => c.states[i] === 'claimed');
      if (fresh.length > 0) await sets.finalise(agent, fresh, c.id);
    },
    'groups, claim then finalise (D48: the batch key names the group)': async (tag: string, b: number) => {
      const keys = keysOf(tag, b);
      const group = `${tag}-b${b}`;
      const c = await sets.claim(agent, keys, undefined, group);
      const fresh = keys.filter((_, i) => c.states[i] === 'claimed');
      if (fresh.length > 0) await sets.finalise(agent, fresh, c.id, group);
    },
  };
  const rows: Record<string, string[]> = {};
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, claim] of Object.entries(strategies)) {
        const tag = `r${round}${name.slice(0, 3)}`.replaceAll('_', '-');
        const i0 = await info();
        const t0 = performance.now();
        await pool(N / BATCH, 4, (b) => claim(tag, b));
        const fresh = await info();
        const t1 = performance.now();
        await pool(N / BATCH, 4, (b) => claim(tag, b));
        const dup = await info();
        const t2 = performance.now();
        (rows[name] ??= []).push(
          `fresh ${(((fresh.cpu - i0.cpu) * 1e6) / N).toFixed(2)} us/key (${((N / (t1 - t0)) * 1000 / 1000).toFixed(0)}k keys/s), ` +
            `duplicate ${(((dup.cpu - fresh.cpu) * 1e6) / N).toFixed(2)} us/key (${((N / (t2 - t1)) * 1000 / 1000).toFixed(0)}k/s), ${((fresh.mem - i0.mem) / N).toFixed(0)} B/key`,
        );
      }
    }
    const load = (await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ');
    console.log(`Redis ${url}; ${N} keys a round, ${BATCH} a call, 4 in flight; Redis CPU per key (INFO used_cpu, whole server), memory per key; load ${load}`);
    for (const [name, r] of Object.entries(rows)) console.log(`${name}:\n  ${r.join('\n  ')}`);
    if (process.env.BENCH_CLAIM_FREE === '1') {
      const big = `${prefix}free-test`;
      for (let i = 0; i < 1_000_000; i += 10_000) await redis.sadd(big, ...Array.from({ length: 10_000 }, (_, j) => `free-${i + j}_${'0123456789abcdef'.repeat(2)}`));
      const t = performance.now();
      await redis.del(big);
      console.log(`freeing a bucket set of 1 000 000 keys on the main thread (DEL): ${(performance.now() - t).toFixed(0)} ms`);
    }
  } finally {
    await dropKeys(url, prefix).catch(() => undefined);
    redis.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
