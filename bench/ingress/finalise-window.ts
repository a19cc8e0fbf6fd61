/**
 * The window between a batch's answer and its keys' finalise (docs/http.md "Idempotency", D39): two ingress
 * replicas on one Redis (each with its own claims connection, as two processes have), a send that is acknowledged
 * at once, and a client that sends each batch's retry as soon as it has read the 200 — alternately to the other
 * replica and to the same one. Prints when the finalise completed relative to the client reading the 200
 * (negative: before) and how many immediate retries were answered 503 (still pending) instead of `duplicates`.
 * `flock /tmp/h/bench.lock npx tsx bench/ingress/finalise-window.ts` (BENCH_WINDOW_N batches, default 1000).
 */
import { request } from 'undici';
import { HttpIngress } from '../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../src/adapters/http/ingress-auth.js';
import { createRedis } from '../../src/adapters/redis/client.js';
import { redisIdempotencyClaims, type IdempotencyClaims } from '../../src/adapters/redis/idempotency-claims.js';
import { createAgentRegistry } from '../../src/engine/blueprint/registry.js';
import { benchProcessEnv } from '../sink/services-env.js';
import { dropKeys } from './redis-keys.js';

const N = Number(process.env.BENCH_WINDOW_N ?? 1000);
const url = process.env.BENCH_REDIS_URL ?? benchProcessEnv().REDIS_URL ?? 'redis://127.0.0.1:16379';
const prefix = `bench-window-${Date.now().toString(36)}:`;
const registry = createAgentRegistry([{ id: 'w-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('w-key')], registered: true }]);
/** When each batch's finalise completed (by its first key). */
const finalisedAt = new Map<string, number>();

async function replica() {
  const redis = createRedis(url, { enableAutoPipelining: false });
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: 86_400 });
  const timed: IdempotencyClaims = {
    ...claims,
    finalise: async (agent, keys, id) => {
      await claims.finalise(agent, keys, id);
      finalisedAt.set(keys[0], performance.now());
    },
  };
  const ing = new HttpIngress({ host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, ratePerSecond: 1e6 }, { registry: () => registry, publish: async () => undefined, publishBatch: async () => undefined, idempotency: timed });
  await ing.ready();
  return { ing, redis, port: await ing.listen() };
}

async function main(): Promise<void> {
  const a = await replica();
  const b = await replica();
  const body = (n: number) => JSON.stringify({ batch_id: `b${n}`, event_count: 10, events: Array.from({ length: 10 }, (_, i) => ({ trace_id: `t${i}`, reasoning_text: 'r', idempotency_key: `b${n}_t${i}` })) });
  const post = (port: number, n: number) => request(`http://127.0.0.1:${port}/v1/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'w-key' }, body: body(n) });
  const gaps: number[] = [];
  let otherPending = 0;
  let samePending = 0;
  try {
    for (let n = 0; n < N; n++) {
      const r = await post(a.port, n);
      await r.body.json();
      const read = performance.now();
      const other = n % 2 === 1;
      const retry = await post(other ? b.port : a.port, n);
      await retry.body.json();
      if (retry.statusCode === 503 && other) otherPending++;
      else if (retry.statusCode === 503) samePending++;
      await new Promise((res) => setTimeout(res, 2));
      gaps.push(finalisedAt.get(`b${n}_t0`)! - read);
    }
  } finally {
    await a.ing.close();
    await b.ing.close();
    a.redis.disconnect();
    b.redis.disconnect();
    await dropKeys(url, prefix).catch(() => undefined);
  }
  gaps.sort((x, y) => x - y);
  const q = (p: number) => gaps[Math.floor(p * (gaps.length - 1))].toFixed(3);
  const load = (await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`${N} batches of 10; Redis ${url}; load ${load}`);
  console.log(`finalise completed relative to the client reading the 200 (ms): p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${q(1)}`);
  console.log(`immediate retries answered 503 (pending): other replica ${otherPending} of ${Math.floor(N / 2)}, same replica ${samePending} of ${Math.ceil(N / 2)}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
