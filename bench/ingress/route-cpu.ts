/**
 * The batch route's own CPU, without Kafka or Redis (docs/http.md "Where the CPU goes on a nested-virtualisation
 * machine"): the ingress's POST /v1/ingest/traces/batch (API key, rate limit, body schema, mapping, trace
 * validation, serialisation; the send and the claims are no-ops) against a bare Fastify route that parses the same
 * bodies, serialises each event and answers. First through Fastify's inject (no sockets), alternating; then over
 * real sockets, the batches posted by the bench's load child (load.ts, 4 in flight), this process's CPU over the
 * child's timed part. What is left of bench:ingress's CPU per trace beyond these is the Kafka and Redis clients'.
 * `npx tsx bench/ingress/route-cpu.ts` (BENCH_ROUTE_BATCHES, default 600 batches of 100 events; BENCH_ROUTE_SOCKETS=0
 * skips the second part).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { HttpIngress } from '../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../src/engine/blueprint/registry.js';
import { batchIdOf, ingestEvents } from './payloads.js';
import { child } from './child.js';

const N = Number(process.env.BENCH_ROUTE_BATCHES ?? 600);

/** This process's CPU µs per trace while the load child posts N batches to `url` (its timed part only). */
async function overSockets(url: string, tag: string): Promise<number> {
  const n = N * 100;
  let c0: NodeJS.CpuUsage | undefined;
  await child('./load.ts', ['http', url, String(n), '100', '4', 'k1', tag], {}, () => (c0 = process.cpuUsage()));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

async function main(): Promise<void> {
  const registry = createAgentRegistry([{ id: 'a1', tenant: 'bench', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('k1')], registered: true }], 'ACL-2');
  const ingress = new HttpIngress({ host: '127.0.0.1', port: 0, maxBodyBytes: 16 << 20, ratePerSecond: 1e9 }, { registry: () => registry, publish: async () => undefined, publishBatch: async () => undefined });
  await ingress.ready();
  const bare = Fastify({ bodyLimit: 16 << 20, logger: false });
  bare.post('/v1/ingest/traces/batch', async (req, reply) => {
    const events = (req.body as { events: unknown[] }).events;
    for (const e of events) JSON.stringify(e);
    return reply.code(200).send({ accepted: events.length });
  });
  await bare.ready();
  const bodies = Array.from({ length: N }, (_, b) => JSON.stringify({ batch_id: batchIdOf(b, 'r'), events: ingestEvents(b, 100, 'r'), event_count: 100 }));
  const run = async (app: FastifyInstance): Promise<number> => {
    const c0 = process.cpuUsage();
    for (let b = 0; b < N; b++) {
      const r = await app.inject({ method: 'POST', url: '/v1/ingest/traces/batch', headers: { 'content-type': 'application/json', 'x-api-key': 'k1', 'x-idempotency-key': batchIdOf(b, 'r') }, payload: bodies[b] });
      if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${r.body}`);
    }
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / (N * 100);
  };
  for (let i = 0; i < 2; i++) {
    await run(ingress.app);
    await run(bare);
  }
  const rounds: [number, number][] = [];
  for (let i = 0; i < 5; i++) rounds.push([await run(ingress.app), await run(bare)]);
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`CPU µs per trace through inject (batches of 100): ingress route ${rounds.map((r) => r[0].toFixed(2)).join(' ')}; bare route ${rounds.map((r) => r[1].toFixed(2)).join(' ')}`);
  console.log(`route_cpu_us_per_trace=${med(rounds.map((r) => r[0])).toFixed(2)} bare_route_cpu_us_per_trace=${med(rounds.map((r) => r[1])).toFixed(2)}`);
  if (process.env.BENCH_ROUTE_SOCKETS !== '0') {
    const port = await ingress.listen();
    await bare.listen({ host: '127.0.0.1', port: 0 });
    const barePort = (bare.server.address() as { port: number }).port;
    const sock: [number, number][] = [];
    for (let i = 0; i < 3; i++) sock.push([await overSockets(`http://127.0.0.1:${port}/v1`, `s${i}`), await overSockets(`http://127.0.0.1:${barePort}/v1`, `t${i}`)]);
    console.log(`CPU µs per trace over sockets (a load child, 4 in flight; rounds warm up): ingress route ${sock.map((r) => r[0].toFixed(1)).join(' ')}; bare route ${sock.map((r) => r[1].toFixed(1)).join(' ')}`);
  }
  await ingress.close();
  await bare.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
