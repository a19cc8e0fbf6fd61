/**
 * HTTP ingress benchmark (docs/http.md), one bounded run on the real services of scripts/services.sh:
 *  1. decide round trip: POST /v1/decide (HTTP → StewardClient → tripwire stage → reply) vs StewardClient.decide
 *     over Kafka directly, same stage, same run; p50/p99.
 *  2. batch ingest: POST /v1/ingest/traces/batch (100 events a batch, 4 in flight) vs producing the same
 *     traces to acgp.traces directly (100 a send, 4 in flight); traces per second.
 * Prints `http_p99_vs_kafka_sync=<ratio>` (goal ≤ 1.3) and `ingress_vs_kafka_produce=<ratio>` (goal ≥ 0.5) last.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchProcessEnv } from '../sink/services-env.js';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { startPipeline, type PipelineDeps } from '../../src/process/pipeline.js';
import { startHttpIngress } from '../../src/process/http-ingress.js';
import { apiKeyHash } from '../../src/adapters/http/ingress-auth.js';
import { StewardClient } from '../../src/client/steward-client.js';
import { createLogger } from '../../src/logger.js';
import type { Trace } from '../../src/engine/types.js';
import { benchEngineDeps } from '../pipeline/engine.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 300);
const INGEST_N = Number(process.env.BENCH_INGEST_N ?? 20_000);
const BATCH = 100;
const IN_FLIGHT = 4;
const AGENT = 'http-b0';
const KEY = 'bench-key';

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const trace = (i: number, tag: string): Trace => ({ trace_id: `${tag}-${i}`, agent_id: AGENT, timestamp: new Date().toISOString(), hook: 'tool_call', tool: 'search', args: { q: `query ${i}` } });

async function pool(n: number, width: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await job(next++);
  }));
}

async function main(): Promise<void> {
  const prefix = `bench-http-${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), 'steward-bench-http-'));
  writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: ${AGENT}\n    api_keys: ["${apiKeyHash(KEY)}"]\n`);
  const cfg = buildConfig(
    {
      topics: { prefix, partitions: 6, reply_partitions: 4 },
      consumer: { group_prefix: prefix },
      redis: { key_prefix: `${prefix}:` },
      limits: { max_event_time_skew_ms: null },
      observability: { enabled: false },
      blueprints: { agents: join(dir, 'agents.yaml'), watch: false },
      http: { enabled: true, port: 0, limits: { rate_per_second: 1_000_000 } },
    },
    benchProcessEnv(),
  );
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
    // 2. ingest throughput. The tripwire stage is stopped first: it would otherwise spend the CPU on the
    // backlog the first of the two measurements left, inside the second one (both paths only produce).
    await pipe.stop();
    const producer = await adapter.producer();
    const k0 = performance.now();
    await pool(INGEST_N / BATCH, IN_FLIGHT, async (b) => {
      await producer.send([{ topic: names.traces, messages: Array.from({ length: BATCH }, (_, j) => ({ key: AGENT, value: Buffer.from(JSON.stringify(trace(b * BATCH + j, 'p'))) })) }]);
    });
    const produceRate = INGEST_N / ((performance.now() - k0) / 1000);
    await producer.disconnect();
    const h0 = performance.now();
    let refused = 0;
    await pool(INGEST_N / BATCH, IN_FLIGHT, async (b) => {
      const events = Array.from({ length: BATCH }, (_, j) => ({ trace_id: `i-${b * BATCH + j}`, agent_type: 'executor', goal: 'g', user_query: 'q', reasoning_text: `r ${j}`, final_output: '', context_information: {}, timestamp: new Date().toISOString().slice(0, -1), idempotency_key: `${prefix}-b${b}-${j}` }));
      const r = await fetch(`${url}/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'x-idempotency-key': `${prefix}-b${b}` }, body: JSON.stringify({ batch_id: `b${b}`, events, event_count: BATCH }) });
      if (r.status !== 200) refused++;
      await r.arrayBuffer();
    });
    const ingestRate = INGEST_N / ((performance.now() - h0) / 1000);
    console.log(`engine: ${engineName}; round trips: ${ROUND_TRIPS} each; fallbacks/errors: ${fallbacks}; refused batches: ${refused}`);
    console.log(`kafka sync decide: p50 ${pct(kafkaMs, 50).toFixed(2)} ms, p99 ${pct(kafkaMs, 99).toFixed(2)} ms`);
    console.log(`http decide:       p50 ${pct(httpMs, 50).toFixed(2)} ms, p99 ${pct(httpMs, 99).toFixed(2)} ms`);
    console.log(`direct produce: ${produceRate.toFixed(0)} traces/s; http batch ingest: ${ingestRate.toFixed(0)} traces/s (${INGEST_N} traces, ${BATCH} a batch, ${IN_FLIGHT} in flight)`);
    console.log(`http_p99_vs_kafka_sync=${(pct(httpMs, 99) / pct(kafkaMs, 99)).toFixed(3)}`);
    console.log(`ingress_vs_kafka_produce=${(ingestRate / produceRate).toFixed(3)}`);
  } finally {
    await client.close();
    await ing.close();
    await pipe.stop();
    await close();
    await admin.deleteTopics(Object.values(names)).catch(() => undefined);
    await admin.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
