/**
 * Profiling aid for the pipeline bench (not a benchmark; prints no ratio): runs only the tripwire-stage
 * throughput phase (PROFILE_MODE=stage, default; stage-fixed = the stage with a constant-answer engine), the
 * in-process engine-only phase (PROFILE_MODE=engine; PROFILE_ENGINE_STATE=memory: in-process state instead of Redis), the scorer stage over the tripwire stage's output
 * (PROFILE_MODE=scorer; PROFILE_SCORER_INPUT=join for the join: docs/pipeline.md "Hot path"), or a raw
 * kafkajs passthrough (PROFILE_MODE=pass; pass2 = passthrough producing the stage's output volume)
 * on the same traffic, so `node --cpu-prof --import tsx bench/pipeline/profile.ts` profiles just that.
 */
import { benchProcessEnv } from '../sink/services-env.js';
import { StewardEngine, type DecisionRecord, type ScoreRecord, type StewardEngineOptions } from '../../src/engine/steward-engine.js';
import { MemoryStateStore } from '../../src/engine/state/memory-state-store.js';
import { MemoryTrustDebtStore } from '../../src/engine/trust-debt/memory-store.js';
import { loadavg } from 'node:os';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { startPipeline, type PipelineDeps } from '../../src/process/pipeline.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import { createLogger } from '../../src/logger.js';
import type { Trace } from '../../src/engine/types.js';
import { benchEngineDeps, BENCH_AGENTS } from './engine.js';
import { demoTrace } from '../../src/demo/agents.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const N = Number(process.env.BENCH_THROUGHPUT_N ?? 20000);
const MODE = process.env.PROFILE_MODE ?? 'stage';
const RUN = Date.now().toString(36);
function benchTrace(i: number): Trace {
  const a = BENCH_AGENTS[i % BENCH_AGENTS.length];
  return demoTrace(a.type, i, 3, Date.UTC(2026, 0, 1) + i * 60_000, `p${RUN}`, a.id);
}
const env = benchProcessEnv;

/** With PROFILE_OUT=file.cpuprofile, a CPU profile of the measured phase alone (setup excluded). */
async function profiled<T>(fn: () => Promise<T>): Promise<T> {
  const out = process.env.PROFILE_OUT;
  if (!out) return fn();
  const s = new Session();
  s.connect();
  await s.post('Profiler.enable');
  await s.post('Profiler.setSamplingInterval', { interval: 200 });
  await s.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await s.post('Profiler.stop');
    writeFileSync(out, JSON.stringify(profile));
    s.disconnect();
  }
}

async function main(): Promise<void> {
  const prefix = `prof-${RUN}`;
  const cfg = buildConfig({ topics: { prefix, partitions: 3, reply_partitions: 1 }, consumer: { group_prefix: prefix }, limits: { partitions_concurrently: 3, chunk_size: Number(process.env.BENCH_CHUNK ?? 500), max_event_time_skew_ms: null }, observability: { enabled: false } }, env());
  // PROFILE_SCORER_INPUT=join: consumer.scorer_input join (the tripwire stage writes decisions only; the scorer reads them and their traces).
  if (process.env.PROFILE_SCORER_INPUT === 'join') cfg.consumer.scorerInput = 'join';
  const { deps, close } = await benchEngineDeps(cfg);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  const names = topicNames(prefix);
  try {
    if (MODE === 'engine') {
      const lanes = new Map<string, Trace[]>();
      for (let i = 0; i < N; i++) {
        const t = benchTrace(100_000 + i);
        lanes.set(t.agent_id, [...(lanes.get(t.agent_id) ?? []), t]);
      }
      // PROFILE_ENGINE_STATE=memory: the same engine (blueprints, registry, gate, ACM, rollouts) with in-process
      // rate windows and trust debt instead of Redis — what the Redis state path costs, in the same process.
      const memory = process.env.PROFILE_ENGINE_STATE === 'memory';
      const engine = memory ? new StewardEngine({ ...(deps.engine as unknown as { o: StewardEngineOptions }).o, state: new MemoryStateStore(), trustDebt: new MemoryTrustDebtStore() }) : deps.engine!;
      // A warm-up lane pass (JIT, script load), then the measured traffic.
      await Promise.all([...lanes.values()].map((ts) => engine.decide(ts[0]!, Date.parse(ts[0]!.timestamp))));
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      await profiled(() => Promise.all([...lanes.values()].map(async (ts) => {
        for (const t of ts.slice(1)) await engine.decide(t, Date.parse(t.timestamp));
      })));
      const cpu = process.cpuUsage(c0);
      const n = N - lanes.size;
      console.log(`engine_only_decide_per_s=${(n / ((performance.now() - t0) / 1000)).toFixed(0)} cpu_us_per_decide=${((cpu.user + cpu.system) / n).toFixed(1)} (user ${(cpu.user / n).toFixed(1)}, system ${(cpu.system / n).toFixed(1)}) state=${memory ? 'memory' : 'redis'} load=${loadavg()[0]!.toFixed(2)}`);
      return;
    }
    await createTopics(admin, names, { partitions: 3, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
    const kafka = new Kafka({ clientId: 'prof', brokers: cfg.kafka.brokers, logLevel: process.env.PROFILE_KAFKA_LOG ? logLevel.ERROR : logLevel.NOTHING });
    const p = kafka.producer();
    await p.connect();
    for (let i = 0; i < N; i += 1000) {
      await p.send({ topic: names.traces, messages: Array.from({ length: Math.min(1000, N - i) }, (_, j) => {
        const t = benchTrace(i + j);
        return { key: t.agent_id, value: JSON.stringify(t) };
      }) });
    }
    await p.disconnect();
    if (MODE === 'pass' || MODE === 'pass2') {
      // Raw kafkajs consume → produce as in bench/pipeline/run.ts; 'pass2' produces what the tripwire
      // stage produces per trace (a decision-sized and a scoring-sized message) to price the output volume alone.
      const dec = 'd'.repeat(Number(process.env.PASS2_DECISION_BYTES ?? 496));
      const sco = 's'.repeat(Number(process.env.PASS2_SCORING_BYTES ?? 1447));
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      const consumer = kafka.consumer({ groupId: `${prefix}-pass`, maxWaitTimeInMs: 100 });
      await Promise.all([producer.connect(), consumer.connect()]);
      await consumer.subscribe({ topic: names.traces, fromBeginning: true });
      let seen = 0;
      let resolveDone!: () => void;
      const done = new Promise<void>((r) => (resolveDone = r));
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      await profiled(async () => {
        await consumer.run({
          partitionsConsumedConcurrently: 3,
          eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
            if (MODE === 'pass') await producer.sendBatch({ topicMessages: [{ topic: names.decisions, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) }], acks: -1 });
            // in the stage's chunks (one request per 500, as the stage sends): a whole batch would exceed max.message.bytes
            else for (let i = 0; i < batch.messages.length; i += 500) {
              const ms = batch.messages.slice(i, i + 500);
              await producer.sendBatch({ topicMessages: [{ topic: names.decisions, messages: ms.map((m) => ({ key: m.key, value: dec })) }, { topic: names.scoring, messages: ms.map((m) => ({ key: m.key, value: sco })) }], acks: -1 });
            }
            resolveOffset(batch.lastOffset());
            await heartbeat();
            seen += batch.messages.length;
            if (seen >= N) resolveDone();
          },
        });
        await done;
      });
      const cpu = process.cpuUsage(c0);
      console.log(`${MODE}_msgs_per_s=${(N / ((performance.now() - t0) / 1000)).toFixed(0)} cpu_us_per_msg=${((cpu.user + cpu.system) / N).toFixed(1)}`);
      await Promise.all([producer.disconnect(), consumer.disconnect()]);
      return;
    }
    if (MODE === 'scorer') {
      // The tripwire stage (not profiled) writes the scoring records, then the scorer stage alone is measured;
      // PROFILE_SCORER_AT_LEAST_ONCE=1 without its transactions.
      const tm = new StewardMetrics();
      const tpipe = await startPipeline(cfg, ['tripwire'], deps as PipelineDeps, { logger: createLogger({ level: 'silent' }), metrics: tm });
      const count = async (m: StewardMetrics, stage: string) => (await m.messages.get()).values.filter((x) => x.labels.stage === stage).reduce((a, x) => a + x.value, 0);
      while ((await count(tm, 'tripwire')) < N) await new Promise((r) => setTimeout(r, 20));
      await tpipe.stop();
      const scoring = Number((await admin.topicOffsets(cfg.consumer.scorerInput === 'join' ? names.decisions : names.scoring)).reduce((a, o) => a + BigInt(o.high), 0n));
      const scfg = process.env.PROFILE_SCORER_AT_LEAST_ONCE ? { ...cfg, consumer: { ...cfg.consumer, exactlyOnce: [] } } : cfg;
      const sm = new StewardMetrics();
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const spipe = await profiled(async () => {
        const sp = await startPipeline(scfg, ['scorer'], { ...(deps as PipelineDeps), scoredMarks: undefined }, { logger: createLogger({ level: 'silent' }), metrics: sm });
        while ((await count(sm, 'scorer')) < scoring) await new Promise((r) => setTimeout(r, 20));
        return sp;
      });
      const cpu = process.cpuUsage(c0);
      console.log(`steward_scorer_msgs_per_s=${(scoring / ((performance.now() - t0) / 1000)).toFixed(0)} cpu_us_per_msg=${((cpu.user + cpu.system) / scoring).toFixed(1)} exactly_once=${scfg.consumer.exactlyOnce.includes('scorer')} scorer_input=${cfg.consumer.scorerInput}`);
      await spipe.stop();
      return;
    }
    const metrics = new StewardMetrics();
    // PROFILE_MODE=stage-fixed: the same stage with an engine that answers each agent type's first real
    // decision again (same output sizes, no tripwire work, no Redis): what Kafka and the stage cost alone.
    let stageDeps = deps as PipelineDeps;
    // PROFILE_ENGINE_STATE=memory in stage mode: the stage over the same engine on in-process rate windows and trust
    // debt — the ceiling of any design that keeps the decision path's state in the stage's own memory.
    if (MODE === 'stage' && process.env.PROFILE_ENGINE_STATE === 'memory') {
      stageDeps = { ...stageDeps, engine: new StewardEngine({ ...(deps.engine as unknown as { o: StewardEngineOptions }).o, state: new MemoryStateStore(), trustDebt: new MemoryTrustDebtStore() }) };
    }
    if (MODE === 'stage-fixed') {
      const fixed = new Map<string, DecisionRecord>();
      for (let i = 0; i < BENCH_AGENTS.length; i++) {
        const t = benchTrace(300_000 + i);
        const type = BENCH_AGENTS[i].type;
        if (!fixed.has(type)) fixed.set(type, await deps.engine!.decide(t, Date.parse(t.timestamp)));
      }
      const typeOf = new Map(BENCH_AGENTS.map((a) => [a.id, a.type]));
      // PROFILE_FIXED_WAIT_MS: each answer after a timer (waits like a Redis round trip, without its CPU).
      const wait = Number(process.env.PROFILE_FIXED_WAIT_MS ?? 0);
      const answer = (t: Trace) => fixed.get(typeOf.get(t.agent_id)!);
      stageDeps = {
        ...stageDeps,
        engine: {
          decide: (t: Trace) => (wait > 0 ? new Promise<DecisionRecord>((r) => setTimeout(() => r(answer(t)!), wait)) : Promise.resolve(answer(t)!)),
          score: (): Promise<ScoreRecord> => Promise.reject(new Error('unused')),
        },
      };
    }
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const pipe = await profiled(async () => {
      const pipe = await startPipeline(cfg, ['tripwire'], stageDeps, { logger: createLogger({ level: 'silent' }), metrics });
      for (;;) {
        const v = (await metrics.messages.get()).values.filter((x) => x.labels.stage === 'tripwire').reduce((a, x) => a + x.value, 0);
        if (v >= N) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      return pipe;
    });
    const cpu = process.cpuUsage(c0);
    console.log(`steward_tripwire_msgs_per_s=${(N / ((performance.now() - t0) / 1000)).toFixed(0)} cpu_us_per_msg=${((cpu.user + cpu.system) / N).toFixed(1)} (user ${(cpu.user / N).toFixed(1)}, system ${(cpu.system / N).toFixed(1)})`);
    await pipe.stop();
  } finally {
    await close();
    await admin.deleteTopics(Object.values(names)).catch(() => undefined);
    await admin.disconnect();
  }
}

main().then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
