/**
 * HTTP ingress benchmark (docs/http.md "Benchmark"), one bounded run on the real services of scripts/services.sh.
 * The agents are other processes, as deployed: the headline figures come from child processes, the same
 * measures made from this process (which also runs the tripwire stage and the ingress) are printed as diagnostics.
 *  1. decide round trip: POST /v1/decide (HTTP → StewardClient → tripwire stage → reply) vs StewardClient.decide
 *     over Kafka directly, same stage, same run, alternating; p50/p95/p99.
 *     a. in process (diagnostic): this process's StewardClient and `fetch`, alternating;
 *     b. from an agent process (bench/ingress/agent.ts): StewardClient.decide, undici `request` (lean, keep-alive)
 *        and `fetch`, in turn — `http_p99_vs_kafka_sync=` is the lean client's p99 over the Kafka path's; and the
 *        same lean POST to a bare route that answers at once (floor.ts), `http_exchange_p99_vs_kafka_sync=`: the
 *        HTTP decide is the Kafka round trip plus one such exchange, whose tail bounds the ratio from below.
 *  2. batch ingest: POST /v1/ingest/traces/batch (100 events a batch, 4 in flight) vs producing the same
 *     traces to acgp.traces directly (100 a send, 4 in flight); traces per second.
 *     a. in process (diagnostic): the load generator's JSON and fetch share this process's event loop with the
 *        ingress, while the direct producer has no client at all;
 *     b. from a child process (bench/ingress/load.ts, undici `request`; with `fetch` too, printed) —
 *        `ingress_vs_kafka_produce=`; and the ingress process's CPU share meanwhile.
 *     c. the same load against an ingress with http.idempotency.dedupe 'pipeline' (D52: no claims on the request
 *        path), `ingress_vs_kafka_produce_pipeline_dedupe=`, and against the default ingress as a process of its own
 *        (ingress-child.ts: `steward run --stages none`, no engine beside it), `ingress_vs_kafka_produce_own_process=`.
 * Before the ingest rounds every server under test (the three ingresses, the floors) is warmed with BENCH_INGEST_WARM
 * traces (default 200 000) from one load child, to the steady state of a deployed ingress; those loads' rates are
 * printed as the cold figures. The ingest comparisons run BENCH_ROUNDS rounds (default 5), each the direct produce then the HTTP ingest of
 * BENCH_INGEST_N traces; each ratio printed is the median of its rounds' ratios (a round takes about a second: one
 * burst of other work on a shared machine spoils a round, not the result). BENCH_ROUND_TRIPS (default 1000) round
 * trips per path and place.
 * Prints `http_p99_vs_kafka_sync=<ratio>` (goal ≤ 1.3) and `ingress_vs_kafka_produce=<ratio>` (goal ≥ 0.5) last.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { startPipeline, type PipelineDeps } from '../../src/process/pipeline.js';
import { startHttpIngress } from '../../src/process/http-ingress.js';
import { apiKeyHash } from '../../src/adapters/http/ingress-auth.js';
import { StewardClient } from '../../src/client/steward-client.js';
import { createLogger } from '../../src/logger.js';
import type { Trace } from '../../src/engine/types.js';
import { startFloorServer } from './floor.js';
import { benchIngressConfig } from './config.js';
import { child } from './child.js';
import { benchEngineDeps } from '../pipeline/engine.js';
import { dropKeys } from './redis-keys.js';
import { brokerPid, processCpuUs, redisCpuUs } from '../proc-cpu.js';
import { createRedis } from '../../src/adapters/redis/client.js';
import { batchIdOf, ingestEvents, pool, produceValues, trace as payloadTrace } from './payloads.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const INGEST_N = Number(process.env.BENCH_INGEST_N ?? 20_000);
const BATCH = 100;
/** Traces each server under test is warmed with before the timed rounds (BENCH_INGEST_WARM), whole batches. */
const WARM_N = Math.max(1, Math.round(Number(process.env.BENCH_INGEST_WARM ?? 200_000) / BATCH)) * BATCH;
const IN_FLIGHT = 4;
const AGENT = 'http-b0';
const KEY = 'bench-key';

const median = (xs: number[]) => pct(xs, 50);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const trace = (i: number, tag: string): Trace => payloadTrace(i, tag, AGENT);

type Load = { rate: number; refused: number; cpuUsPerTrace: number };
/** CPU µs per trace of each process on a path over a load child's timed part (bench/ingress/proc-cpu.ts). */
type CpuSplit = { client: number; ingress: number; broker: number; redis: number };
type LoadPath = 'produce' | 'http' | 'pipeline' | 'own' | 'fetch' | 'floor';

async function main(): Promise<void> {
  const prefix = `bench-http-${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), 'steward-bench-http-'));
  writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: ${AGENT}\n    api_keys: ["${apiKeyHash(KEY)}"]\n`);
  const cfg = benchIngressConfig(prefix, join(dir, 'agents.yaml'));
  const names = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  await createTopics(admin, names, { partitions: 6, replicationFactor: 1, replyPartitions: 4, replyRetentionMs: 600_000 });
  const logger = createLogger({ level: 'silent' });
  const { deps, engineName, close } = await benchEngineDeps(cfg);
  const pipe = await startPipeline(cfg, ['tripwire'], deps as PipelineDeps, { logger });
  const ing = await startHttpIngress(cfg, logger);
  const url = `http://127.0.0.1:${ing.port}/v1`;
  const client = new StewardClient({ kafka: adapter, topicPrefix: prefix, replyPartition: 0 });
  const redisInfo = createRedis(cfg.redis.url, { maxRetriesPerRequest: 1 });
  const broker = brokerPid();
  const splits: Record<Exclude<LoadPath, 'fetch'>, CpuSplit[]> = { produce: [], http: [], pipeline: [], own: [], floor: [] };
  /** Runs a load child and charges each process's CPU during its timed part to its traces. */
  /** The ingress under test when it is a process of its own (path 'own'): its CPU is read from /proc. */
  let ownPid: number | undefined;
  const ingressCpuUs = (path: LoadPath) => (path === 'own' ? processCpuUs(ownPid) : (({ user, system }) => user + system)(process.cpuUsage()));
  const loadChild = async (path: LoadPath, args: string[], env?: Record<string, string>): Promise<Load> => {
    let r0: Promise<number> = Promise.resolve(0);
    let b0 = 0;
    let i0 = ingressCpuUs(path);
    const out = await child<Load>('./load.ts', args, env, () => {
      r0 = redisCpuUs(() => redisInfo.info('cpu'));
      b0 = processCpuUs(broker);
      i0 = ingressCpuUs(path);
    });
    const i = ingressCpuUs(path) - i0;
    const traces = INGEST_N;
    if (path !== 'fetch') {
      splits[path].push({
        client: out.cpuUsPerTrace,
        ingress: path !== 'produce' ? i / traces : 0,
        broker: (processCpuUs(broker) - b0) / traces,
        redis: ((await redisCpuUs(() => redisInfo.info('cpu'))) - (await r0)) / traces,
      });
    }
    return out;
  };
  try {
    await client.connect();
    await new Promise((r) => setTimeout(r, 1000));
    // 1. round trips, alternating so both paths see the same broker and stage conditions.
    const kafkaMs: number[] = [];
    const httpMs: number[] = [];
    let fallbacks = 0;
    for (let i = 0; i < ROUND_TRIPS + 20; i++) {
      let t0 = performance.now();
      const d = await client.decide(trace(i, 'k'), { timeoutMs: 5000 });
      if (d.fallback) fallbacks++;
      if (i >= 20) kafkaMs.push(performance.now() - t0);
      t0 = performance.now();
      const r = await fetch(`${url}/decide`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: JSON.stringify({ trace_id: `h-${i}`, timeout_ms: 5000, steward: { tool: 'search', args: { q: `query ${i}` } } }) });
      const body = (await r.json()) as { fallback?: boolean };
      if (r.status !== 200 || body.fallback) fallbacks++;
      if (i >= 20) httpMs.push(performance.now() - t0);
    }
    // 1b. the same from an agent process: Kafka, lean HTTP client, fetch, in turn.
    // The bare route (bench/ingress/floor.ts) answers at once: the HTTP exchange alone, timed by the agent in turn.
    const floorOn = process.env.BENCH_INGEST_FLOOR !== '0';
    const floorBare = floorOn ? await startFloorServer(undefined, names.traces, AGENT) : undefined;
    const agent = await child<{ kafka: number[]; lean: number[]; fetch: number[]; bare: number[]; failures: number }>('./agent.ts', [prefix, url, KEY, AGENT, String(ROUND_TRIPS), ...(floorBare ? [floorBare.url] : [])]);
    fallbacks += agent.failures;
    // 2. ingest throughput. The tripwire stage is stopped first: it would otherwise spend the CPU on the
    // backlog the first of the two measurements left, inside the second one (both paths only produce).
    await pipe.stop();
    const producer = await adapter.producer();
    let refused = 0;
    const inProc: { produce: number; http: number }[] = [];
    const outProc: { produce: number; http: number }[] = [];
    const outFetch: { produce: number; http: number }[] = [];
    // The floors (bench/ingress/floor.ts): a bare route that produces the batch and answers, and one that only
    // answers; BENCH_INGEST_FLOOR=0 skips them.
    const floorSend = floorOn ? await startFloorServer(producer, names.traces, AGENT) : undefined;
    const floors: { produce: number; send: number; bare: number }[] = [];
    // The same ingress with http.idempotency.dedupe 'pipeline' (D52): no claims on the request path; the events go
    // out with their keys in a header for the tripwire stage (stopped here, as for the default's rounds).
    const ingPipe = await startHttpIngress({ ...cfg, http: { ...cfg.http, port: 0, idempotency: { ...cfg.http.idempotency, dedupe: 'pipeline' } } }, logger);
    const pipeUrl = `http://127.0.0.1:${ingPipe.port}/v1`;
    const outPipe: { produce: number; http: number }[] = [];
    // The ingress as a process of its own (bench/ingress/ingress-child.ts; `steward run --stages none`), no engine or
    // stage beside it: the shape of an ingress replica.
    const own = await startOwnIngress(prefix, join(dir, 'agents.yaml'));
    ownPid = own.pid;
    const outOwn: { produce: number; http: number }[] = [];
    // Every server under test is warmed to its steady state before the rounds, as a deployed ingress (and the broker
    // the direct path writes to) is: V8 tiers the per-batch code up over thousands of batches (docs/http.md
    // "Warm-up": an ingress process's CPU per trace halves over its first ~200 000 traces). The warm-up loads' rates are
    // printed: the cold figures.
    const warmRates: string[] = [];
    const targets: [string, string][] = [['http', url], ['pipeline', pipeUrl], ['own', own.url], ...(floorSend && floorBare ? [['floor', floorSend.url], ['floor-bare', floorBare.url]] as [string, string][] : [])];
    for (const [name, u] of targets) {
      const w = await child<Load>('./load.ts', ['http', u, String(WARM_N), String(BATCH), String(IN_FLIGHT), KEY, `${prefix}-warm-${name}`], { BENCH_LOAD_WARM: '0' });
      warmRates.push(`${name} ${(w.rate / 1000).toFixed(1)}k/s`);
    }
    let cpuShare = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const k0 = performance.now();
      await pool(INGEST_N / BATCH, IN_FLIGHT, async (b) => {
        await producer.send([{ topic: names.traces, messages: produceValues(b, BATCH, AGENT).map((value) => ({ key: AGENT, value })) }]);
      });
      const produce = INGEST_N / ((performance.now() - k0) / 1000);
      const tag = `${prefix}-r${round}`;
      const h0 = performance.now();
      await pool(INGEST_N / BATCH, IN_FLIGHT, async (b) => {
        const r = await fetch(`${url}/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'x-idempotency-key': batchIdOf(b, tag) }, body: JSON.stringify({ batch_id: batchIdOf(b, tag), events: ingestEvents(b, BATCH, tag), event_count: BATCH }) });
        if (r.status !== 200) refused++;
        await r.arrayBuffer();
      });
      inProc.push({ produce, http: INGEST_N / ((performance.now() - h0) / 1000) });
      // 3. the same two, with the load generated by a child process (as agents are other processes): the measured
      // process is the ingress alone, and the direct producer is the agent's own.
      const childProduce = await loadChild('produce', ['produce', names.traces, String(INGEST_N), String(BATCH), String(IN_FLIGHT), AGENT]);
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      const childIngest = await loadChild('http', ['http', url, String(INGEST_N), String(BATCH), String(IN_FLIGHT), KEY, `${tag}-c`]);
      const cpu = process.cpuUsage(cpu0);
      cpuShare = Math.max(cpuShare, (cpu.user + cpu.system) / 1000 / (performance.now() - w0));
      refused += childIngest.refused;
      outProc.push({ produce: childProduce.rate, http: childIngest.rate });
      const childPipe = await loadChild('pipeline', ['http', pipeUrl, String(INGEST_N), String(BATCH), String(IN_FLIGHT), KEY, `${tag}-p`]);
      refused += childPipe.refused;
      outPipe.push({ produce: childProduce.rate, http: childPipe.rate });
      const childOwn = await loadChild('own', ['http', own.url, String(INGEST_N), String(BATCH), String(IN_FLIGHT), KEY, `${tag}-o`]);
      refused += childOwn.refused;
      outOwn.push({ produce: childProduce.rate, http: childOwn.rate });
      const childFetch = await loadChild('fetch', ['http', url, String(INGEST_N), String(BATCH), String(IN_FLIGHT), KEY, `${tag}-f`], { BENCH_INGEST_CLIENT: 'fetch' });
      refused += childFetch.refused;
      outFetch.push({ produce: childProduce.rate, http: childFetch.rate });
      if (floorSend && floorBare) {
        const send = await loadChild('floor', ['http', floorSend.url, String(INGEST_N), String(BATCH), String(IN_FLIGHT), KEY, `${tag}-fs`]);
        const bare = await child<Load>('./load.ts', ['http', floorBare.url, String(INGEST_N), String(BATCH), String(IN_FLIGHT), KEY, `${tag}-fb`]);
        floors.push({ produce: childProduce.rate, send: send.rate, bare: bare.rate });
      }
    }
    await ingPipe.close();
    await own.close();
    await floorSend?.close();
    await floorBare?.close();
    await producer.disconnect();
    const line = (xs: { produce: number; http: number }[]) => xs.map((x) => `${(x.http / 1000).toFixed(1)}k/${(x.produce / 1000).toFixed(1)}k=${(x.http / x.produce).toFixed(3)}`).join(' ');
    const ms = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} ms, p95 ${pct(xs, 95).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
    const ratio = (a: number[], b: number[], p: number) => (pct(a, p) / pct(b, p)).toFixed(3);
    console.log(`engine: ${engineName}; round trips: ${ROUND_TRIPS} each; fallbacks/errors: ${fallbacks}; refused batches: ${refused}`);
    console.log('decide round trips, in process (diagnostic: this process also runs the stage, both reply consumers and the ingress):');
    console.log(`  kafka sync decide:     ${ms(kafkaMs)}`);
    console.log(`  http decide (fetch):   ${ms(httpMs)}`);
    console.log(`  http_p95_vs_kafka_sync_in_process=${ratio(httpMs, kafkaMs, 95)} http_p99_vs_kafka_sync_in_process=${ratio(httpMs, kafkaMs, 99)}`);
    console.log('decide round trips from an agent process (bench/ingress/agent.ts):');
    console.log(`  kafka sync decide:     ${ms(agent.kafka)}`);
    console.log(`  http decide (fetch):   ${ms(agent.fetch)}`);
    console.log(`  http decide (undici request): ${ms(agent.lean)}`);
    console.log(`  http_p99_vs_kafka_sync_agent_fetch=${ratio(agent.fetch, agent.kafka, 99)} http_p95_vs_kafka_sync=${ratio(agent.lean, agent.kafka, 95)}`);
    if (agent.bare.length) {
      // A decide over HTTP is the Kafka round trip plus one HTTP exchange: the exchange's own tail bounds the ratio from below.
      console.log(`  http exchange alone (bare Fastify route, answered at once; undici request): ${ms(agent.bare)}`);
      console.log(`  http_exchange_p99_vs_kafka_sync=${ratio(agent.bare, agent.kafka, 99)}`);
    }
    console.log(`warm-up before the rounds (${WARM_N} traces each, one load, from the first batch after start): ${warmRates.join(', ')}`);
    console.log(`ingest rounds (http/direct traces/s, ${INGEST_N} traces, ${BATCH} a batch, ${IN_FLIGHT} in flight), in process (diagnostic): ${line(inProc)}`);
    console.log(`  ingress_vs_kafka_produce_in_process=${median(inProc.map((x) => x.http / x.produce)).toFixed(3)}`);
    console.log(`  agents in a child process, fetch: ${line(outFetch)}`);
    console.log(`  ingress_vs_kafka_produce_agent_fetch=${median(outFetch.map((x) => x.http / x.produce)).toFixed(3)}`);
    console.log(`  agents in a child process, undici request: ${line(outProc)}; the ingress process used at most ${(cpuShare * 100).toFixed(0)}% of one core (child start-up included)`);
    const med = (xs: CpuSplit[], k: keyof CpuSplit) => median(xs.map((x) => x[k])).toFixed(1);
    const split = (xs: CpuSplit[]) => `client ${med(xs, 'client')}, ingress ${med(xs, 'ingress')}, broker ${med(xs, 'broker')}, redis ${med(xs, 'redis')}`;
    console.log(`  CPU µs per trace, medians of the rounds (timed parts, the finalises after an answer included; broker ${broker === undefined ? 'not found' : `pid ${broker}`}): direct produce: ${split(splits.produce)}; http (undici): ${split(splits.http)}; http, dedupe pipeline: ${split(splits.pipeline)}; http, ingress in a process of its own: ${split(splits.own)}${splits.floor.length ? `; floor (bare route, produce then answer): ${split(splits.floor)}` : ""}`);
    if (floors.length) {
      console.log(`  floors from the child, undici request (bare Fastify route: produce the batch as it came, then answer / answer at once): ${floors.map((f) => `${(f.send / 1000).toFixed(1)}k / ${(f.bare / 1000).toFixed(1)}k vs direct ${(f.produce / 1000).toFixed(1)}k`).join('; ')}`);
      console.log(`  ingest_floor_vs_kafka_produce=${median(floors.map((f) => f.send / f.produce)).toFixed(3)} http_exchange_alone_vs_kafka_produce=${median(floors.map((f) => f.bare / f.produce)).toFixed(3)}`);
    }
    console.log(`  dedupe pipeline (D52), undici request: ${line(outPipe)}`);
    console.log(`  ingress_vs_kafka_produce_pipeline_dedupe=${median(outPipe.map((x) => x.http / x.produce)).toFixed(3)}`);
    console.log(`  ingress in a process of its own (no stage or engine beside it), undici request: ${line(outOwn)}`);
    console.log(`  ingress_vs_kafka_produce_own_process=${median(outOwn.map((x) => x.http / x.produce)).toFixed(3)}`);
    console.log(`http_p99_vs_kafka_sync=${ratio(agent.lean, agent.kafka, 99)}`);
    console.log(`ingress_vs_kafka_produce=${median(outProc.map((x) => x.http / x.produce)).toFixed(3)}`);
  } finally {
    await client.close();
    redisInfo.disconnect();
    await ing.close();
    await pipe.stop();
    await close();
    await admin.deleteTopics(Object.values(names)).catch(() => undefined);
    await dropKeys(cfg.redis.url, `${prefix}:`).catch(() => undefined);
    await admin.disconnect();
  }
}

/** Starts bench/ingress/ingress-child.ts; answers its URL and pid, and a close that ends it. */
async function startOwnIngress(prefix: string, agents: string): Promise<{ url: string; pid: number; close(): Promise<void> }> {
  const c = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL('./ingress-child.ts', import.meta.url)), prefix, agents], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    c.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(out.slice(0, nl)) as { port: number }).port);
    });
    c.on('exit', (code) => reject(new Error(`ingress-child exited ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/v1`,
    pid: c.pid!,
    close: () =>
      new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.stdin.end();
      }),
  };
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
