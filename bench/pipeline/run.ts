/**
 * Pipeline benchmark (bounded, one run), on the real Kafka of scripts/services.sh:
 *  1. sync decision round trip (StewardClient.decide → tripwire stage → reply) vs a raw kafkajs echo
 *     round trip (produce → consumer echoes to a reply partition → client consumer), p50/p99;
 *  2. tripwire-stage throughput (decode, engine, decisions + acks + offsets, with consumer.scorer_input: join:
 *     one record out per trace) vs a raw kafkajs consume→produce passthrough on the same number of traces; the
 *     stage with scorer_input: scoring (decision + scoring record) is printed as throughput_vs_passthrough_scoring_input;
 *  3. end to end: traces → tripwire + scorer + sink stages → decision and verdict rows in ClickHouse, vs the
 *     same passthrough (end_to_end_vs_passthrough; bench/pipeline/end-to-end.ts);
 *  4. RSS.
 * Diagnostics: CPU per message of the passthrough and the stage, the raw passthrough producing the
 * stage's output volume per trace (a decision and a scoring message of the measured average sizes), and
 * the stage with a constant-answer engine (Kafka + stage machinery without tripwire work or Redis).
 * The headline `throughput_vs_passthrough` is the median ratio of BENCH_THROUGHPUT_ROUNDS (default 3) pairs run one
 * after the other — a passthrough (fresh group over the same records), then the join stage (fresh topics, traces of
 * the same mix) — each pair's ratio printed with the load; the diagnostics divide by the median passthrough rate.
 * Prints `sync_p99_vs_echo=<ratio>` and `throughput_vs_passthrough=<ratio>` last.
 */
import { loadavg } from 'node:os';
import { benchProcessEnv } from '../sink/services-env.js';
import type { DecisionRecord, ScoreRecord } from '../../src/engine/steward-engine.js';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { startPipeline, type PipelineDeps } from '../../src/process/pipeline.js';
import { StewardClient } from '../../src/client/steward-client.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import { createLogger } from '../../src/logger.js';
import type { Trace } from '../../src/engine/types.js';
import { benchEngineDeps, BENCH_AGENTS } from './engine.js';
import { decisionMessage } from '../../src/contracts/engine-records.js';
import { scoringJson } from '../../src/consumers/scoring-message.js';
import { endToEndRate } from './end-to-end.js';
import { kafkajsPassthrough } from './raw-clients.js';
import { benchTrace, fill } from './traces.js';
import { brokerPid, processCpuUs, redisCpuUs } from '../proc-cpu.js';
import { createRedis } from '../../src/adapters/redis/client.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 300);
// 50 000 traces: a passthrough of 20 000 lasted 0.2-0.35 s with its group join and swung 58k-116k msg/s between runs.
const THROUGHPUT_N = Number(process.env.BENCH_THROUGHPUT_N ?? 50000);
// The headline is the median of this many alternating (passthrough, join stage) pairs, each pair's ratio printed.
const THROUGHPUT_ROUNDS = Math.max(1, Number(process.env.BENCH_THROUGHPUT_ROUNDS ?? 3));
const PARTITIONS = 3;

const env = benchProcessEnv;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const mb = () => Math.round(process.memoryUsage().rss / 1048576);

async function rawEcho(kafka: Kafka, inTopic: string, replyTopic: string): Promise<number[]> {
  const producer: Producer = kafka.producer();
  const echoProducer: Producer = kafka.producer();
  const echo: Consumer = kafka.consumer({ groupId: `${inTopic}-echo`, maxWaitTimeInMs: 100 });
  const client: Consumer = kafka.consumer({ groupId: `${inTopic}-client`, maxWaitTimeInMs: 100 });
  await Promise.all([producer.connect(), echoProducer.connect(), echo.connect(), client.connect()]);
  await echo.subscribe({ topic: inTopic, fromBeginning: false });
  await client.subscribe({ topic: replyTopic, fromBeginning: false });
  let waiting: ((id: string) => void) | undefined;
  const joined = Promise.all([new Promise((r) => echo.on(echo.events.GROUP_JOIN, r)), new Promise((r) => client.on(client.events.GROUP_JOIN, r))]);
  await echo.run({
    eachMessage: async ({ message }) => {
      await echoProducer.send({ topic: replyTopic, messages: [{ key: message.key, value: message.value, partition: 0 }] });
    },
  });
  await client.run({ eachMessage: async ({ message }) => waiting?.(message.value!.toString()) });
  await joined;
  await new Promise((r) => setTimeout(r, 1000));
  const lat: number[] = [];
  for (let i = 0; i < ROUND_TRIPS + 20; i++) {
    const t = benchTrace(i);
    const body = JSON.stringify(t);
    const t0 = performance.now();
    const done = new Promise<void>((res) => {
      waiting = (v) => {
        if (v === body) res();
      };
    });
    await producer.send({ topic: inTopic, messages: [{ key: t.agent_id, value: body }] });
    await done;
    if (i >= 20) lat.push(performance.now() - t0);
  }
  await Promise.all([producer.disconnect(), echoProducer.disconnect(), echo.disconnect(), client.disconnect()]);
  return lat;
}

/** Resolves once `stage` counted `n` messages in `metrics` (polled every 20 ms; gives up after 3 min). */
async function processed(metrics: StewardMetrics, stage: string, n: number, phase: string): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const v = (await metrics.messages.get()).values.filter((x) => x.labels.stage === stage).reduce((a, x) => a + x.value, 0);
    if (v >= n) return;
    if (performance.now() - t0 > 180_000) throw new Error(`${phase} timed out at ${v}/${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const e = env();
  const prefix = `bench-${Date.now().toString(36)}`;
  const cfg = buildConfig(
    // The sync phase and the headline run the scorer input under test (BENCH_SCORER_INPUT, default join: one record out per trace).
    { topics: { prefix, partitions: PARTITIONS, reply_partitions: 4 }, consumer: { group_prefix: prefix, scorer_input: process.env.BENCH_SCORER_INPUT ?? 'join' }, limits: { partitions_concurrently: PARTITIONS, chunk_size: Number(process.env.BENCH_CHUNK ?? 500), max_event_time_skew_ms: null }, observability: { enabled: false } },
    e,
  );
  const names = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  const extra = { echoIn: `${prefix}.echo-in`, echoReply: `${prefix}.echo-reply`, passIn: `${prefix}.pass-in`, passOut: `${prefix}.pass-out`, passOut2: `${prefix}.pass-out2`, pass2In: `${prefix}.pass2-in`, tputIn: `${prefix}t.traces` };
  const tputNames = topicNames(`${prefix}t`);
  const fixedNames = topicNames(`${prefix}f`);
  const joinRounds = Array.from({ length: THROUGHPUT_ROUNDS }, (_, r) => topicNames(`${prefix}j${r}`));
  const joinNames = joinRounds[0]!;
  await createTopics(admin, names, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 4, replyRetentionMs: 600_000 });
  await createTopics(admin, tputNames, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
  await createTopics(admin, fixedNames, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
  for (const jn of joinRounds) await createTopics(admin, jn, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
  await admin.createTopics([extra.echoIn, extra.echoReply, extra.passIn, extra.passOut, extra.passOut2, extra.pass2In].map((topic) => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })));
  const kafka = new Kafka({ clientId: 'bench-raw', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const logger = createLogger({ level: 'silent' });
  const { deps, engineName, close } = await benchEngineDeps(cfg);
  const rssStart = mb();
  try {
    // 1. round trips
    const echo = await rawEcho(kafka, extra.echoIn, extra.echoReply);
    const pipe = await startPipeline(cfg, (process.env.BENCH_SYNC_STAGES ?? 'tripwire').split(',') as ('tripwire' | 'scorer')[], deps as PipelineDeps, { logger });
    const client = new StewardClient({ kafka: adapter, topicPrefix: prefix, replyPartition: 0 });
    await client.connect();
    await new Promise((r) => setTimeout(r, 1000));
    const sync: number[] = [];
    let fallbacks = 0;
    for (let i = 0; i < ROUND_TRIPS + 20; i++) {
      const t0 = performance.now();
      const d = await client.decide(benchTrace(i), { timeoutMs: 5000 });
      if (d.fallback) fallbacks++;
      if (i >= 20) sync.push(performance.now() - t0);
    }
    await client.close();
    await pipe.stop();
    const rssSync = mb();

    // 2a. the engine alone, in-process, same traffic and per-agent ordering: the ceiling any stage can reach here.
    const engineN = Math.min(THROUGHPUT_N, 6000);
    const lanes = new Map<string, Trace[]>();
    for (let i = 0; i < engineN; i++) {
      const t = benchTrace(100_000 + i);
      lanes.set(t.agent_id, [...(lanes.get(t.agent_id) ?? []), t]);
    }
    const e0 = performance.now();
    await Promise.all([...lanes.values()].map(async (ts) => {
      for (const t of ts) await deps.engine!.decide(t, Date.parse(t.timestamp));
    }));
    const engineRate = engineN / ((performance.now() - e0) / 1000);
    // What the tripwire stage produces per trace (decision + scoring JSON), averaged over a sample.
    let decisionBytes = 0, scoringBytes = 0, scored = 0;
    for (let i = 0; i < 300; i++) {
      const t = benchTrace(200_000 + i);
      const rec = await deps.engine!.decide(t, Date.parse(t.timestamp));
      const d = JSON.stringify(decisionMessage(rec, t, 0, Date.now(), '0.1.0'));
      decisionBytes += d.length;
      if (!(rec as { halted?: boolean }).halted) {
        scoringBytes += scoringJson(JSON.stringify(t), Date.parse(t.timestamp), rec, undefined).length;
        scored++;
      }
    }
    const outShape = [
      { topic: extra.passOut, value: 'd'.repeat(Math.round(decisionBytes / 300)) },
      { topic: extra.passOut2, value: 's'.repeat(Math.round(scoringBytes / Math.max(1, scored))) },
    ];

    // 2b. throughput: the headline pairs first (passthrough, join stage) x THROUGHPUT_ROUNDS, then the diagnostics.
    const median = (xs: number[]) => {
      const v = [...xs].sort((a, b) => a - b);
      const h = Math.floor(v.length / 2);
      return v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
    };
    const us = (c: NodeJS.CpuUsage) => ((c.user + c.system) / THROUGHPUT_N).toFixed(1);
    await fill(kafka, extra.passIn, THROUGHPUT_N);
    const pairs: { pass: number; join: number; passCpu: NodeJS.CpuUsage; joinCpu: NodeJS.CpuUsage; passSvc: Svc; joinSvc: Svc }[] = [];
    // The services' CPU per message too (bench/proc-cpu.ts): on a 2-core machine the broker and Redis share the
    // cores with the stage, so a path's cost is the sum over its processes.
    type Svc = { broker: number; redis: number };
    const infoRedis = createRedis(cfg.redis.url, { maxRetriesPerRequest: 1 });
    const broker = brokerPid();
    const svcNow = async (): Promise<Svc> => ({ broker: processCpuUs(broker), redis: await redisCpuUs(() => infoRedis.info('cpu')) });
    const svcPer = (a: Svc, b: Svc): Svc => ({ broker: (b.broker - a.broker) / THROUGHPUT_N, redis: (b.redis - a.redis) / THROUGHPUT_N });
    let jcfg = cfg;
    for (let r = 0; r < THROUGHPUT_ROUNDS; r++) {
      // Fill before the pair, so neither side of it measures the other's setup.
      await fill(kafka, joinRounds[r]!.traces, THROUGHPUT_N, 10_000_000 * (r + 1));
      const load0 = loadavg()[0]!;
      let s0 = await svcNow();
      let c0 = process.cpuUsage();
      // A fresh group over the same records each round: every passthrough reads the same bytes.
      const pass = await kafkajsPassthrough(kafka, extra.passIn, extra.passOut, THROUGHPUT_N, PARTITIONS, undefined, `${extra.passIn}-pass${r}`);
      const passCpu = process.cpuUsage(c0);
      const passSvc = svcPer(s0, await svcNow());
      s0 = await svcNow();
      // The stage with consumer.scorer_input: join (docs/pipeline.md "Hot path"): one record out per trace.
      const jmetrics = new StewardMetrics();
      c0 = process.cpuUsage();
      const j0 = performance.now();
      const rcfg = { ...cfg, topics: { ...cfg.topics, prefix: `${prefix}j${r}` }, consumer: { ...cfg.consumer, groupPrefix: `${prefix}j${r}`, scorerInput: 'join' as const } };
      if (r === 0) jcfg = rcfg;
      const jpipe = await startPipeline(rcfg, ['tripwire'], deps as PipelineDeps, { logger, metrics: jmetrics });
      await processed(jmetrics, 'tripwire', THROUGHPUT_N, 'join throughput phase');
      const join = THROUGHPUT_N / ((performance.now() - j0) / 1000);
      const joinCpu = process.cpuUsage(c0);
      const joinSvc = svcPer(s0, await svcNow());
      await jpipe.stop();
      pairs.push({ pass, join, passCpu, joinCpu, passSvc, joinSvc });
      const svc = (x: Svc) => `broker_cpu_us=${x.broker.toFixed(1)} redis_cpu_us=${x.redis.toFixed(1)}`;
      console.log(
        `throughput_pair=${r + 1}/${THROUGHPUT_ROUNDS} passthrough_msgs_per_s=${pass.toFixed(0)} cpu_us_per_msg=${us(passCpu)} ${svc(passSvc)} join_tripwire_msgs_per_s=${join.toFixed(0)} cpu_us_per_msg=${us(joinCpu)} ${svc(joinSvc)} ratio=${(join / pass).toFixed(3)} load=${load0.toFixed(2)}/${loadavg()[0]!.toFixed(2)}`,
      );
    }
    const passRate = median(pairs.map((p) => p.pass));
    const joinRate = median(pairs.map((p) => p.join));
    const headline = median(pairs.map((p) => p.join / p.pass));
    const cpuMedian = (f: (p: (typeof pairs)[number]) => NodeJS.CpuUsage) => median(pairs.map((p) => { const c = f(p); return (c.user + c.system) / THROUGHPUT_N; })).toFixed(1);
    infoRedis.disconnect();
    const svcMedian = (f: (p: (typeof pairs)[number]) => Svc) => `broker ${median(pairs.map((p) => f(p).broker)).toFixed(1)}, redis ${median(pairs.map((p) => f(p).redis)).toFixed(1)}`;
    console.log(
      `cpu_split_us_per_msg (medians of ${THROUGHPUT_ROUNDS}; broker ${broker === undefined ? 'not found' : `pid ${broker}`}): passthrough: process ${cpuMedian((p) => p.passCpu)}, ${svcMedian((p) => p.passSvc)}; join stage: process ${cpuMedian((p) => p.joinCpu)}, ${svcMedian((p) => p.joinSvc)}`,
    );
    // Diagnostic only (not the baseline): the same raw passthrough producing the stage's output volume.
    await fill(kafka, extra.pass2In, THROUGHPUT_N);
    const pass2Rate = await kafkajsPassthrough(kafka, extra.pass2In, extra.passOut, THROUGHPUT_N, PARTITIONS, outShape);
    await fill(kafka, tputNames.traces, THROUGHPUT_N);
    const metrics = new StewardMetrics();
    let c0 = process.cpuUsage();
    const t0 = performance.now();
    const tcfg = { ...cfg, topics: { ...cfg.topics, prefix: `${prefix}t` }, consumer: { ...cfg.consumer, groupPrefix: `${prefix}t`, scorerInput: 'scoring' as const } };
    const tpipe = await startPipeline(tcfg, ['tripwire'], deps as PipelineDeps, { logger, metrics });
    await processed(metrics, 'tripwire', THROUGHPUT_N, 'throughput phase');
    const stewardRate = THROUGHPUT_N / ((performance.now() - t0) / 1000);
    const stewardCpu = process.cpuUsage(c0);
    await tpipe.stop();
    const rssEnd = mb();

    // Diagnostic: the scorer stage over the scoring records the tripwire phase wrote, with its verdicts committed in
    // transactions (consumer.exactly_once, the default) and at-least-once, each in its own group.
    const scoringRecords = Number((await admin.topicOffsets(tputNames.scoring)).reduce((a, o) => a + BigInt(o.high), 0n));
    const scorerRate = async (suffix: string, exactlyOnce: ('tripwire' | 'scorer')[]): Promise<number> => {
      const m = new StewardMetrics();
      const scfg = { ...tcfg, consumer: { ...tcfg.consumer, groupPrefix: `${prefix}${suffix}`, exactlyOnce } };
      const s0 = performance.now();
      const spipe = await startPipeline(scfg, ['scorer'], { ...(deps as PipelineDeps), scoredMarks: undefined }, { logger, metrics: m });
      await processed(m, 'scorer', scoringRecords, 'scorer phase');
      const rate = scoringRecords / ((performance.now() - s0) / 1000);
      await spipe.stop();
      return rate;
    };
    // Rounds alternate exactly-once and at-least-once (BENCH_SCORER_ROUNDS, default 2), medians compared: one pair
    // swung from 0.36 to 1.16 with the load of the shared machine.
    const ROUNDS = Number(process.env.BENCH_SCORER_ROUNDS ?? 2);
    const alternate = async (rate: (suffix: string, eo: ('tripwire' | 'scorer')[]) => Promise<number>, tag: string) => {
      const tx: number[] = [], alo: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        tx.push(await rate(`${tag}t${r}`, ['scorer']));
        alo.push(await rate(`${tag}a${r}`, []));
      }
      return { tx: median(tx), alo: median(alo), rounds: tx.map((t, i) => `${t.toFixed(0)}/${alo[i].toFixed(0)}`).join(' ') };
    };
    const sc = await alternate(scorerRate, 's');
    const [scorerTx, scorerAlo] = [sc.tx, sc.alo];
    // The join scorer over the join phase's decisions (halted ones are counted too: skipped without a read).
    const decisionRecords = Number((await admin.topicOffsets(joinNames.decisions)).reduce((a, o) => a + BigInt(o.high), 0n));
    const joinScorerRate = async (suffix: string, exactlyOnce: ('tripwire' | 'scorer')[]): Promise<number> => {
      const m = new StewardMetrics();
      const scfg = { ...jcfg, consumer: { ...jcfg.consumer, groupPrefix: `${prefix}${suffix}`, exactlyOnce } };
      const s0 = performance.now();
      const spipe = await startPipeline(scfg, ['scorer'], { ...(deps as PipelineDeps), scoredMarks: undefined }, { logger, metrics: m });
      await processed(m, 'scorer', decisionRecords, 'join scorer phase');
      const rate = decisionRecords / ((performance.now() - s0) / 1000);
      await spipe.stop();
      return rate;
    };
    const jc = await alternate(joinScorerRate, 'j');
    const [joinTx, joinAlo] = [jc.tx, jc.alo];

    // Diagnostic only: the same stage with an engine answering each agent type's real decision again
    // (same outputs and sizes; no tripwire work, no Redis) — what Kafka and the stage machinery cost alone.
    const fixed = new Map<string, DecisionRecord>();
    for (let i = 0; i < BENCH_AGENTS.length; i++) {
      const t = benchTrace(300_000 + i);
      if (!fixed.has(BENCH_AGENTS[i].type)) fixed.set(BENCH_AGENTS[i].type, await deps.engine!.decide(t, Date.parse(t.timestamp)));
    }
    const typeOf = new Map(BENCH_AGENTS.map((a) => [a.id, a.type]));
    const fixedEngine = { decide: (t: Trace) => Promise.resolve(fixed.get(typeOf.get(t.agent_id)!)!), score: (): Promise<ScoreRecord> => Promise.reject(new Error('unused')) };
    await fill(kafka, fixedNames.traces, THROUGHPUT_N);
    const fmetrics = new StewardMetrics();
    c0 = process.cpuUsage();
    const f0 = performance.now();
    const fcfg = { ...cfg, topics: { ...cfg.topics, prefix: `${prefix}f` }, consumer: { ...cfg.consumer, groupPrefix: `${prefix}f`, scorerInput: 'scoring' as const } };
    const fpipe = await startPipeline(fcfg, ['tripwire'], { ...(deps as PipelineDeps), engine: fixedEngine }, { logger, metrics: fmetrics });
    await processed(fmetrics, 'tripwire', THROUGHPUT_N, 'fixed-engine phase');
    const fixedRate = THROUGHPUT_N / ((performance.now() - f0) / 1000);
    const fixedCpu = process.cpuUsage(c0);
    await fpipe.stop();

    // End to end (trace in → decision and verdict rows in ClickHouse), each scorer input, same traffic.
    const e2eN = Number(process.env.BENCH_E2E_N ?? Math.min(THROUGHPUT_N, 10_000));
    const fillTopic = (topic: string, n: number) => fill(kafka, topic, n);
    const e2eJoin = await endToEndRate({ ...cfg, consumer: { ...cfg.consumer, scorerInput: 'join' } }, deps as PipelineDeps, `${prefix}ej`, e2eN, fillTopic);
    const e2eScoring = await endToEndRate({ ...cfg, consumer: { ...cfg.consumer, scorerInput: 'scoring' } }, deps as PipelineDeps, `${prefix}es`, e2eN, fillTopic);

    const echoP50 = pct(echo, 50), echoP99 = pct(echo, 99), syncP50 = pct(sync, 50), syncP99 = pct(sync, 99);
    console.log(`engine=${engineName} scorer_input=${cfg.consumer.scorerInput} sync_stages=${process.env.BENCH_SYNC_STAGES ?? "tripwire"} round_trips=${ROUND_TRIPS} throughput_n=${THROUGHPUT_N} partitions=${PARTITIONS}`);
    console.log(`echo_p50_ms=${echoP50.toFixed(2)} echo_p99_ms=${echoP99.toFixed(2)}`);
    console.log(`sync_p50_ms=${syncP50.toFixed(2)} sync_p99_ms=${syncP99.toFixed(2)} fallbacks=${fallbacks}`);
    console.log(`passthrough_msgs_per_s=${passRate.toFixed(0)} (median of ${THROUGHPUT_ROUNDS}) steward_tripwire_msgs_per_s=${stewardRate.toFixed(0)} engine_only_decide_per_s=${engineRate.toFixed(0)}`);
    console.log(`cpu_us_per_msg passthrough=${cpuMedian((p) => p.passCpu)} (median) steward_tripwire=${us(stewardCpu)}`);
    console.log(
      `passthrough_with_stage_output_msgs_per_s=${pass2Rate.toFixed(0)} (decision ${outShape[0].value.length} B + scoring ${outShape[1].value.length} B per trace) stage_output_only_vs_passthrough=${(pass2Rate / passRate).toFixed(3)}`,
    );
    console.log(
      `stage_fixed_engine_msgs_per_s=${fixedRate.toFixed(0)} cpu_us_per_msg=${us(fixedCpu)} stage_machinery_only_vs_passthrough=${(fixedRate / passRate).toFixed(3)}`,
    );
    console.log(`throughput_vs_engine_only=${(stewardRate / engineRate).toFixed(3)}`);
    console.log(`scorer_msgs_per_s exactly_once=${scorerTx.toFixed(0)} at_least_once=${scorerAlo.toFixed(0)} (${scoringRecords} scoring records, no LLM; medians of rounds eo/alo ${sc.rounds}) exactly_once_vs_at_least_once=${(scorerTx / scorerAlo).toFixed(3)}`);
    console.log(`join_scorer_msgs_per_s exactly_once=${joinTx.toFixed(0)} at_least_once=${joinAlo.toFixed(0)} (${decisionRecords} decisions; rounds ${jc.rounds}) join_exactly_once_vs_at_least_once=${(joinTx / joinAlo).toFixed(3)}`);
    console.log(`scoring_input_tripwire_msgs_per_s=${stewardRate.toFixed(0)} cpu_us_per_msg=${us(stewardCpu)} join_tripwire_msgs_per_s=${joinRate.toFixed(0)} cpu_us_per_msg=${cpuMedian((p) => p.joinCpu)} (medians of ${THROUGHPUT_ROUNDS})`);
    console.log(`throughput_vs_passthrough_scoring_input=${(stewardRate / passRate).toFixed(3)}`);
        console.log(`end_to_end_traces_per_s join=${e2eJoin.toFixed(0)} scoring=${e2eScoring.toFixed(0)} (${e2eN} traces → decision + verdict rows in ClickHouse) end_to_end_vs_passthrough_scoring_input=${(e2eScoring / passRate).toFixed(3)}`);
    console.log(`end_to_end_vs_passthrough=${(e2eJoin / passRate).toFixed(3)}`);
        console.log(`rss_mb_start=${rssStart} rss_mb_after_sync=${rssSync} rss_mb_end=${rssEnd}`);
    console.log(`sync_p50_vs_echo=${(syncP50 / echoP50).toFixed(3)}`);
    console.log(`sync_p99_vs_echo=${(syncP99 / echoP99).toFixed(3)}`);
    console.log(`throughput_pairs=${pairs.map((p) => (p.join / p.pass).toFixed(3)).join(' ')} load=${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`throughput_vs_passthrough=${headline.toFixed(3)}`);
  } finally {
    await close();
    await admin.deleteTopics([...Object.values(names), ...Object.values(tputNames), ...Object.values(fixedNames), ...joinRounds.flatMap((jn) => Object.values(jn)), ...Object.values(extra).filter((t) => !t.endsWith('.traces'))]).catch(() => undefined);
    await admin.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
