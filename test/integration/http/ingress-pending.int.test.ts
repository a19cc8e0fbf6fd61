// The reviewer's scenario (issue #24, docs/http.md "Idempotency", D39) through two real ingress replicas over HTTP,
// real Kafka and real claims (a single Redis, and the Redis Cluster): replica A's first send is held, then fails
// (a producer wrapper in the test); the client's retry reaches replica B meanwhile and is answered 503 — not
// `duplicates` — while B produces the batch's fresh event; after A's send fails, the retry produces the held
// events, each exactly once, and the next retry is all duplicates. A pending claim left by a crashed replica is
// claimed again once older than the bound. And the same with the real acgp client (PyPI 0.1.4): its read times out,
// it retries on its own while the first send is held, and its events end up produced once.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { createRedis, type RedisClient } from '../../../src/adapters/redis/client.js';
import { redisIdempotencyClaims, type IdempotencyClaims } from '../../../src/adapters/redis/idempotency-claims.js';
import type { StewardProducer } from '../../../src/adapters/kafka/client.js';
import { createAgentRegistry } from '../../../src/engine/blueprint/registry.js';
import { Collector, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';
import { clusterClient, deleteClusterPrefix } from '../redis-cluster/cluster.js';

const registry = createAgentRegistry([{ id: 'pend-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('pend-key')], registered: true }]);

/**
 * One ingress replica on the real producer and claims; `gate` (when set) holds the next send, then fails it.
 * `pendingWaitMs` 0: a batch meeting pending keys is answered 503 at once (the path the acgp client's retries meet).
 */
async function replica(producer: StewardProducer, topic: string, claims: IdempotencyClaims, pendingWaitMs = 0) {
  let gate: Promise<void> | undefined;
  const ing = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, ratePerSecond: 1000, pendingWaitMs },
    {
      registry: () => registry,
      publish: async () => {
        throw new Error('unused');
      },
      publishBatch: async (items) => {
        const held = gate;
        gate = undefined;
        if (held) {
          await held;
          throw new Error('broker unreachable (test)');
        }
        await producer.send([{ topic, messages: items.map((x) => ({ key: x.trace.agent_id, value: x.json })) }]);
      },
      idempotency: claims,
    },
  );
  const answers: number[] = [];
  ing.app.addHook('onResponse', async (req, reply) => {
    if (req.url.startsWith('/v1/ingest/')) answers.push(reply.statusCode);
  });
  await ing.ready();
  const port = await ing.listen();
  const post = (events: { trace_id: string }[]) =>
    fetch(`http://127.0.0.1:${port}/v1/ingest/traces/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'pend-key', 'x-idempotency-key': 'b1' },
      body: JSON.stringify({ batch_id: 'b1', event_count: events.length, events: events.map((e) => ({ ...e, reasoning_text: 'r', idempotency_key: `b1_${e.trace_id}` })) }),
    });
  return {
    ing,
    port,
    answers,
    post,
    /** Holds the next send until the returned function is called, then fails it. */
    holdThenFail() {
      let go!: () => void;
      gate = new Promise<void>((r) => (go = r));
      return go;
    },
  };
}

async function scenario(redis: RedisClient, prefix: string): Promise<void> {
  await withPipelineEnv('http-pending', async ({ topics, adapter }) => {
    const producer = await adapter.producer();
    const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: 86_400 });
    const a = await replica(producer, topics.traces, claims);
    const b = await replica(producer, topics.traces, claims);
    const out = await new Collector(adapter, [topics.traces]).start();
    try {
      const ev = (n: number) => Array.from({ length: n }, (_, i) => ({ trace_id: `p-${i}` }));
      const fail = a.holdThenFail();
      const first = a.post(ev(3));
      // The client gave up on the first request and retries on the other replica, with one event more.
      await new Promise((r) => setTimeout(r, 300));
      const retry = await b.post(ev(4));
      expect(retry.status).toBe(503);
      expect(retry.headers.get('retry-after')).toBe('1');
      expect(((await retry.json()) as { error: string }).error).toBe('STEWARD_HTTP_PENDING');
      // Before the fix: 200 {accepted: 0, duplicates: 3} here, then A's failure left p-0..p-2 unproduced.
      fail();
      expect((await first).status).toBe(503);
      const again = await b.post(ev(4));
      expect(again.status).toBe(200);
      // p-3 was produced by the 503'd retry and is a duplicate now; the three held events are produced.
      expect(await again.json()).toEqual({ accepted: 3, duplicates: 1, batch_id: 'b1' });
      // Finalised after the answer: the next retry, on either replica, is all duplicates.
      await new Promise((r) => setTimeout(r, 50));
      expect(await (await a.post(ev(4))).json()).toEqual({ accepted: 0, duplicates: 4, batch_id: 'b1' });
      await waitFor(() => out.on(topics.traces).length >= 4, { timeoutMs: 20_000 });
      await new Promise((r) => setTimeout(r, 1000));
      expect(out.json(topics.traces).map((t) => t.trace_id).sort()).toEqual(['p-0', 'p-1', 'p-2', 'p-3']);

      // A replica that waits for pending keys (the default, 15 s): the retry on it meets A's held send, waits, and
      // once that send fails claims and produces the held events itself — answered 200, each produced once.
      const w = await replica(producer, topics.traces, claims, 5_000);
      try {
        const wev = (n: number) => Array.from({ length: n }, (_, i) => ({ trace_id: `w-${i}` }));
        const failW = a.holdThenFail();
        const firstW = a.post(wev(2));
        await new Promise((r) => setTimeout(r, 300));
        const t0 = Date.now();
        const waited = w.post(wev(3));
        await new Promise((r) => setTimeout(r, 700));
        failW();
        expect((await firstW).status).toBe(503);
        const got = await waited;
        expect(got.status).toBe(200);
        expect(await got.json()).toEqual({ accepted: 3, duplicates: 0, batch_id: 'b1' });
        expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
        await new Promise((r) => setTimeout(r, 50));
        expect(await (await a.post(wev(3))).json()).toEqual({ accepted: 0, duplicates: 3, batch_id: 'b1' });
        await waitFor(() => out.on(topics.traces).length >= 7, { timeoutMs: 20_000 });
        await new Promise((r) => setTimeout(r, 1000));
        expect(out.json(topics.traces).map((t) => t.trace_id).filter((id) => id.startsWith('w-')).sort()).toEqual(['w-0', 'w-1', 'w-2']);
      } finally {
        await w.ing.close();
      }

      // A replica crashed between claim and finalise (its claim taken, nothing after): pending until the bound.
      const bounded = redisIdempotencyClaims(redis, { prefix, windowSeconds: 86_400, pendingStaleMs: 600 });
      const c = await replica(producer, topics.traces, bounded);
      try {
        expect((await bounded.claim('pend-agent', ['b1_s-0'])).states).toEqual(['claimed']);
        expect((await c.post([{ trace_id: 's-0' }])).status).toBe(503);
        await new Promise((r) => setTimeout(r, 700));
        expect(await (await c.post([{ trace_id: 's-0' }])).json()).toEqual({ accepted: 1, duplicates: 0, batch_id: 'b1' });
        await waitFor(() => out.on(topics.traces).length >= 8, { timeoutMs: 20_000 });
      } finally {
        await c.ing.close();
      }
    } finally {
      await out.stop();
      await a.ing.close();
      await b.ing.close();
      await producer.disconnect();
    }
  });
}

describe('HTTP ingress: a retry while the first send is pending (real Kafka, Redis)', () => {
  it('on a single Redis', async () => {
    const prefix = uniqueRedisPrefix('http-pend');
    const r = createRedis(services().redisUrl, { enableAutoPipelining: false });
    try {
      await scenario(r, prefix);
    } finally {
      r.disconnect();
      const c = redisClient();
      await deleteRedisPrefix(c, prefix).catch(() => 0);
      c.disconnect();
    }
  }, 90_000);

  it('on the Redis Cluster', async () => {
    const prefix = uniqueRedisPrefix('http-pend-cl');
    const c = await clusterClient();
    try {
      await scenario(c, prefix);
    } finally {
      await deleteClusterPrefix(c, prefix).catch(() => undefined);
      c.disconnect();
    }
  }, 90_000);

  it('the real acgp client: its request times out, its own retries meet the pending claim (503), and its events are produced once', async () => {
    const py = resolve('.venv-acgp/bin/python');
    expect(existsSync(py), `${py} missing: .ci/run creates it`).toBe(true);
    const prefix = uniqueRedisPrefix('http-pend-py');
    const redis = createRedis(services().redisUrl, { enableAutoPipelining: false });
    try {
      await withPipelineEnv('http-pend-py', async ({ topics, adapter }) => {
        const producer = await adapter.producer();
        const a = await replica(producer, topics.traces, redisIdempotencyClaims(redis, { prefix, windowSeconds: 86_400 }));
        const out = await new Collector(adapter, [topics.traces]).start();
        try {
          // The first send is held ~2.5 s, then fails; the client gives up on it after 0.5 s and retries (5xx too).
          const fail = a.holdThenFail();
          const timer = setTimeout(fail, 2500);
          const env = { PATH: process.env.PATH ?? '', ACGP_ENDPOINT: `http://127.0.0.1:${a.port}`, ACGP_API_KEY: 'pend-key', ACGP_READ_TIMEOUT: '0.5', ACGP_MAX_RETRIES: '5', ACGP_RETRY_BASE_DELAY: '0.5', ACGP_FAIL_SILENTLY: 'true' };
          const { stdout } = await promisify(execFile)(py, [resolve('test/integration/http/acgp_agent.py'), '3'], { env, timeout: 60_000 });
          clearTimeout(timer);
          const res = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"trace_ids"'))!) as { trace_ids: string[]; results: { success: boolean }[] };
          expect(res.results).toEqual([expect.objectContaining({ success: true })]);
          // At least one retry met the pending claim (the client was told 503, never `duplicates` for unproduced events).
          expect(a.answers.filter((s) => s === 503).length).toBeGreaterThanOrEqual(1);
          await waitFor(() => out.on(topics.traces).length >= 3, { timeoutMs: 20_000 });
          await new Promise((r) => setTimeout(r, 1000));
          expect(out.json(topics.traces).map((t) => t.trace_id).sort()).toEqual([...res.trace_ids].sort());
        } finally {
          await out.stop();
          await a.ing.close();
          await producer.disconnect();
        }
      });
    } finally {
      redis.disconnect();
      const c = redisClient();
      await deleteRedisPrefix(c, prefix).catch(() => 0);
      c.disconnect();
    }
  }, 90_000);
});
