/**
 * The agent's side of bench:ingress's decide round trips, run as a child process as agents are deployed (another
 * process than the Steward it asks): `agent.ts <topicPrefix> <ingressUrl> <apiKey> <agentId> <n> [<bareUrl>]`.
 * Per iteration, in turn: StewardClient.decide over Kafka, POST /v1/decide with undici's `request` on a keep-alive
 * pool of one connection (a lean client: no WHATWG Request/Response/stream objects), and the same POST with `fetch`
 * (what the in-process measure uses; printed so nothing is hidden). The first 100 iterations warm up (a fresh process runs cold code) and are not kept.
 * With a bareUrl (bench/ingress/floor.ts, answered at once), the same lean POST to it too: the HTTP exchange alone.
 * Prints one JSON line: `{ kafka, lean, fetch, bare: ms[], failures }` (a failure: a non-200 answer or a contract fallback).
 */
import { Agent, request } from 'undici';
import { StewardClient } from '../../src/client/steward-client.js';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { benchProcessEnv } from '../sink/services-env.js';
import { trace } from './payloads.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const WARM = 100;

async function main(): Promise<void> {
  const [prefix, url, key, agentId, nS, bareUrl] = process.argv.slice(2);
  const n = Number(nS);
  const adapter = new KafkaAdapter(buildConfig({}, benchProcessEnv()).kafka);
  // Reply partition 1: the bench process's own client reads partition 0.
  const client = new StewardClient({ kafka: adapter, topicPrefix: prefix, replyPartition: 1 });
  const pool = new Agent({ connections: 1, keepAliveTimeout: 60_000, pipelining: 1 });
  const barePool = new Agent({ connections: 1, keepAliveTimeout: 60_000, pipelining: 1 });
  const out = { kafka: [] as number[], lean: [] as number[], fetch: [] as number[], bare: [] as number[], failures: 0 };
  const body = (i: number, tag: string) => JSON.stringify({ trace_id: `${tag}-${i}`, timeout_ms: 5000, steward: { tool: 'search', args: { q: `query ${i}` } } });
  const headers = { 'content-type': 'application/json', 'x-api-key': key };
  try {
    await client.connect();
    for (let i = 0; i < n + WARM; i++) {
      let t0 = performance.now();
      const d = await client.decide(trace(i, 'ak', agentId), { timeoutMs: 5000 });
      if (d.fallback) out.failures++;
      if (i >= WARM) out.kafka.push(performance.now() - t0);

      t0 = performance.now();
      const r = await request(`${url}/decide`, { method: 'POST', headers, body: body(i, 'al'), dispatcher: pool });
      const a = (await r.body.json()) as { fallback?: boolean };
      if (r.statusCode !== 200 || a.fallback) out.failures++;
      if (i >= WARM) out.lean.push(performance.now() - t0);

      t0 = performance.now();
      const f = await fetch(`${url}/decide`, { method: 'POST', headers, body: body(i, 'af') });
      const b = (await f.json()) as { fallback?: boolean };
      if (f.status !== 200 || b.fallback) out.failures++;
      if (i >= WARM) out.fetch.push(performance.now() - t0);

      if (bareUrl) {
        t0 = performance.now();
        const e = await request(`${bareUrl}/decide`, { method: 'POST', headers, body: body(i, 'ab'), dispatcher: barePool });
        await e.body.json();
        if (e.statusCode !== 200) out.failures++;
        if (i >= WARM) out.bare.push(performance.now() - t0);
      }
    }
  } finally {
    await client.close();
    await pool.close();
    await barePool.close();
  }
  console.log(JSON.stringify(out));
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
