/**
 * topics.avro_outputs measured on the stages (docs/pipeline.md "Hot path", Avro outputs), on the real services:
 *  1. the tripwire stage (consumer.scorer_input: join, one record out per trace) over BENCH_AVRO_N fresh traces,
 *     writing acgp.decisions as JSON vs as Avro (registry id looked up at start-up): msg/s and this process's CPU
 *     per trace, BENCH_AVRO_ROUNDS pairs alternating which mode goes first, each pair's ratio printed with the load;
 *  2. end to end (traces → tripwire + scorer + sink → decision and verdict rows in ClickHouse; end-to-end.ts) with
 *     both outputs JSON vs both Avro, BENCH_AVRO_E2E_ROUNDS alternating pairs of BENCH_AVRO_E2E_N traces.
 * Prints `tripwire_avro_vs_json=<median ratio>` and `end_to_end_avro_vs_json=<median ratio>` (above 1: Avro faster).
 * Run under the benchmark lock; the machine is shared, so only ratios within a pair mean anything.
 */
import { loadavg } from 'node:os';
import { Kafka, logLevel } from 'kafkajs';
import { benchProcessEnv } from '../sink/services-env.js';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig, type StewardConfig } from '../../src/config/steward-config.js';
import { startPipeline, type PipelineDeps } from '../../src/process/pipeline.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import { createLogger } from '../../src/logger.js';
import { benchEngineDeps } from './engine.js';
import { endToEndRate } from './end-to-end.js';
import { traceBatches } from './traces.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const N = Number(process.env.BENCH_AVRO_N ?? 20_000);
const WARMUP = Number(process.env.BENCH_AVRO_WARMUP ?? 5_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_AVRO_ROUNDS ?? 3));
const E2E_N = Number(process.env.BENCH_AVRO_E2E_N ?? 5_000);
const E2E_ROUNDS = Math.max(0, Number(process.env.BENCH_AVRO_E2E_ROUNDS ?? 2));
const PARTITIONS = 3;
type Mode = 'json' | 'avro';

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  const h = Math.floor(v.length / 2);
  return v.length % 2 ? v[h]! : (v[h - 1]! + v[h]!) / 2;
};
const withOutputs = (cfg: StewardConfig, mode: Mode, prefix: string): StewardConfig => ({
  ...cfg,
  topics: { ...cfg.topics, prefix, avroOutputs: mode === 'avro' ? ['decisions', 'verdicts'] : [] },
  consumer: { ...cfg.consumer, groupPrefix: prefix },
});

/**
 * `n` bench traces into `topic` through an idempotent producer: a plain one re-sent batches whose first send had
 * been written (a fresh topic's first requests), leaving ~2 700 records for 2 000 traces in a quick run.
 */
async function fill(kafka: Kafka, topic: string, n: number, from: number): Promise<void> {
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  for (const messages of traceBatches(n, from)) await p.send({ topic, messages, acks: -1 });
  await p.disconnect();
}

/** The output subjects a round registered (soft, then permanent delete through the Confluent API). */
async function dropSubjects(cfg: StewardConfig, prefix: string): Promise<void> {
  const names = topicNames(prefix);
  for (const t of [names.decisions, names.verdicts]) {
    const base = `${cfg.schemaRegistryUrl}/subjects/${encodeURIComponent(`${t}-value`)}`;
    await fetch(base, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${base}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
}

/** The tripwire stage's messages by outcome (ok, dlq, retry). */
async function outcomes(metrics: StewardMetrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const x of (await metrics.messages.get()).values) if (x.labels.stage === 'tripwire') out[String(x.labels.outcome)] = (out[String(x.labels.outcome)] ?? 0) + x.value;
  return out;
}

/** Until `n` traces are done (decided or dead-lettered; a retry is counted again when it succeeds). */
async function processed(metrics: StewardMetrics, n: number): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const o = await outcomes(metrics);
    const v = (o.ok ?? 0) + (o.dlq ?? 0);
    if (v >= n) return;
    if (performance.now() - t0 > 180_000) throw new Error(`tripwire timed out at ${v}/${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const run = `bav${Date.now().toString(36)}`;
  const cfg = buildConfig(
    { topics: { prefix: run, partitions: PARTITIONS }, consumer: { group_prefix: run, scorer_input: 'join' }, limits: { partitions_concurrently: PARTITIONS, chunk_size: 500, max_event_time_skew_ms: null }, observability: { enabled: false } },
    benchProcessEnv(),
  );
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  const kafka = new Kafka({ clientId: 'bench-avro', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const logger = createLogger({ level: 'silent' });
  const { deps, close } = await benchEngineDeps(cfg);
  try {
    // 1. the tripwire stage alone
    const tripwire = async (mode: Mode, r: number, n = N) => {
      const prefix = `${run}${mode[0]}${r < 0 ? 'w' : r}`;
      const names = topicNames(prefix);
      await createTopics(admin, names, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
      try {
        // Traces of their own per run (same mix): the engine's Redis state remembers trace ids, and a pair's second
        // run over the first one's traces ran up to 1.3x faster whichever mode it was.
        await fill(kafka, names.traces, n, 1_000_000 * (r + 2) + (mode === 'avro' ? 500_000 : 0));
        const metrics = new StewardMetrics();
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const pipe = await startPipeline(withOutputs(cfg, mode, prefix), ['tripwire'], deps as PipelineDeps, { logger, metrics });
        await processed(metrics, n);
        const rate = n / ((performance.now() - t0) / 1000);
        const c = process.cpuUsage(c0);
        const o = await outcomes(metrics);
        await pipe.stop();
        const offsets = await admin.topicOffsets(names.decisions);
        const records = offsets.reduce((a, o) => a + Number(o.high), 0);
        return { rate, cpuUs: (c.user + c.system) / n, records, dlq: o.dlq ?? 0, retries: o.retry ?? 0 };
      } finally {
        await admin.deleteTopics(Object.values(names)).catch(() => undefined);
        await dropSubjects(cfg, prefix);
      }
    };
    // Warm-up (not counted): both paths compiled by the JIT before the first pair.
    for (const m of ['json', 'avro'] as Mode[]) await tripwire(m, -1, WARMUP);
    const ratios: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const load0 = loadavg()[0]!;
      const order: Mode[] = r % 2 ? ['avro', 'json'] : ['json', 'avro'];
      const res: Partial<Record<Mode, Awaited<ReturnType<typeof tripwire>>>> = {};
      for (const m of order) res[m] = await tripwire(m, r);
      const j = res.json!, a = res.avro!;
      ratios.push(a.rate / j.rate);
      console.log(`tripwire_pair=${r + 1}/${ROUNDS} first=${order[0]} json_msgs_per_s=${j.rate.toFixed(0)} cpu_us_per_msg=${j.cpuUs.toFixed(1)} avro_msgs_per_s=${a.rate.toFixed(0)} cpu_us_per_msg=${a.cpuUs.toFixed(1)} ratio=${(a.rate / j.rate).toFixed(3)} decisions=${j.records}/${a.records} dlq=${j.dlq}/${a.dlq} retries=${j.retries}/${a.retries} load=${load0.toFixed(2)}/${loadavg()[0]!.toFixed(2)}`);
    }
    // 2. end to end, rows in ClickHouse
    const e2e: number[] = [];
    for (let r = 0; r < E2E_ROUNDS; r++) {
      const load0 = loadavg()[0]!;
      const order: Mode[] = r % 2 ? ['avro', 'json'] : ['json', 'avro'];
      const rate: Partial<Record<Mode, number>> = {};
      for (const m of order) {
        const prefix = `${run}e${m[0]}${r}`;
        rate[m] = await endToEndRate(withOutputs(cfg, m, prefix), deps as PipelineDeps, prefix, E2E_N, (topic, n) => fill(kafka, topic, n, 20_000_000 + 1_000_000 * r + (m === 'avro' ? 500_000 : 0))).finally(() => dropSubjects(cfg, prefix));
      }
      e2e.push(rate.avro! / rate.json!);
      console.log(`end_to_end_pair=${r + 1}/${E2E_ROUNDS} first=${order[0]} json_traces_per_s=${rate.json!.toFixed(0)} avro_traces_per_s=${rate.avro!.toFixed(0)} ratio=${(rate.avro! / rate.json!).toFixed(3)} load=${load0.toFixed(2)}/${loadavg()[0]!.toFixed(2)}`);
    }
    console.log(`tripwire_avro_vs_json=${median(ratios).toFixed(3)}`);
    if (e2e.length > 0) console.log(`end_to_end_avro_vs_json=${median(e2e).toFixed(3)}`);
  } finally {
    await close();
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
