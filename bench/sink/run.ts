/**
 * Sink benchmark (one bounded run) on the real Kafka and ClickHouse of scripts/services.sh.
 *
 * Measured (`sink_rows_per_sec`, printed last): decision records already on a Kafka topic (6 partitions,
 * keyed by agent) go through the sink stage's own consumer loop — kafkajs fetch with the stage's consumer
 * settings → `SinkConsumerLoop` (the stage's pipelined handler) → `SinkProcessor.process` (JSON.parse →
 * decisionRow, POLICY_DECISION draft) → `ClickHouseSink` (TabSeparated, batched, inserts in flight) →
 * offsets committed after the insert. Clock: from the consumer's group join to the acknowledgement of the
 * commit of the last offset of every partition (commits at most every BENCH_SINK_COMMIT_MS, 100 ms). The
 * committed offsets are then checked to equal the high watermarks, and the table to hold exactly N distinct
 * rows. A fresh consumer group per round (the same records are read again; the table dedupes by trace_id).
 * `sink_node_cpu_us_per_row` is this process's CPU time (user + system) over the same window per row.
 *
 * Not in that number: the POLICY_DECISION draft the stage publishes to the ledger topic for every decision
 * (built, but `publishDrafts` is a no-op there). Publishing them is measured separately each round
 * (`sink_with_ledger_drafts_…`: the same path with the drafts produced to a real ledger topic, acks=all;
 * BENCH_SINK_DRAFTS=0 skips it). Chaining and signing the drafts (the ledger topic's own path) is not run here.
 *
 * Context (same rows, same table layout, pre-mapped outside the timing): a raw @clickhouse/client
 * JSONEachRow insert and a raw TabSeparated insert in chunks of the sink's batch size, one at a time.
 * Rounds alternate the paths (medians): the machine is shared and load drifts.
 * BENCH_SINK_PROFILE=<file.cpuprofile> writes a CPU profile of the measured sink windows only.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Session } from 'node:inspector/promises';
import { Readable } from 'node:stream';
import { generateKeyPairSync } from 'node:crypto';
import { createClient } from '@clickhouse/client';
import { KafkaAdapter, type StewardProducer } from '../../src/adapters/kafka/client.js';
import { topicNames } from '../../src/adapters/kafka/topics.js';
import { ClickHouseStore } from '../../src/adapters/clickhouse/client.js';
import { LedgerWriter } from '../../src/adapters/clickhouse/ledger-store.js';
import { migrate } from '../../src/adapters/clickhouse/migrations.js';
import { DECISION_COLUMNS, decisionRow } from '../../src/adapters/clickhouse/rows.js';
import { ClickHouseSink } from '../../src/adapters/clickhouse/sink.js';
import { tsvEncoder } from '../../src/adapters/clickhouse/tsv.js';
import { SinkProcessor } from '../../src/consumers/sink-processor.js';
import { SinkConsumerLoop } from '../../src/consumers/sink-loop.js';
import { ed25519Signer } from '../../src/engine/ledger/index.js';
import type { LedgerDraftMessage } from '../../src/adapters/clickhouse/decision-writer.js';
import { servicesEnv } from './services-env.js';

const N = Number(process.env.BENCH_SINK_ROWS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_SINK_ROUNDS ?? 3);
const PARTITIONS = 6; // topic partitions = the stage's partitionsConcurrently default
const RAW_BATCH = 12_000; // the sink's default maxRows, for the raw baselines
const DRAFTS = process.env.BENCH_SINK_DRAFTS !== '0';
const PROFILE = process.env.BENCH_SINK_PROFILE;
// With BENCH_SINK_PROFILE: BENCH_SINK_HEAP=1 writes a sampling heap profile of all allocations (collected ones included) instead.
const HEAP = process.env.BENCH_SINK_HEAP === '1';
// Offset commits at most every COMMIT_MS (the stage: consumer.autoCommitIntervalMs, default 1000): the clock
// stops at the last commit's acknowledgement, so a long interval would add up to its length to the run.
// BENCH_SINK_SERIAL=1: each batch inserted before its partition is fetched again (no pipelining), for A/B.
const SERIAL = process.env.BENCH_SINK_SERIAL === '1';
// BENCH_SINK_PIDS=name=pid,…: also print those processes' CPU per row over the sink windows (Linux /proc), e.g.
// BENCH_SINK_PIDS=clickhouse=$(pgrep -f clickhouse-server),kafka=<broker pid>.
const PIDS = (process.env.BENCH_SINK_PIDS ?? '').split(',').filter(Boolean).map((x) => x.split('=') as [string, string]);
const TICK_US = 1e6 / 100; // USER_HZ
function procCpuUs(pid: string): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return Number.NaN;
  }
}
// The sink's defaults unless set (for tuning runs).
const MAX_ROWS = process.env.BENCH_SINK_MAXROWS ? Number(process.env.BENCH_SINK_MAXROWS) : undefined;
const IN_FLIGHT = process.env.BENCH_SINK_INFLIGHT ? Number(process.env.BENCH_SINK_INFLIGHT) : undefined;
const COMMIT_MS = Number(process.env.BENCH_SINK_COMMIT_MS ?? 100);

function message(i: number): string {
  const block = i % 7 === 0;
  return JSON.stringify({
    trace_id: `bench-${i}`,
    agent_id: `agent-${i % 200}`,
    tenant: 'acme',
    blueprint: 'finance/trading_bot@1.0',
    intervention: block ? 'block' : 'ok',
    approved: !block,
    stage: block ? 'rule' : 'none',
    halted: false,
    reasons: block ? ['single trade over the cap'] : [],
    tripwires: [{ id: 'trade_size_limit', fired: false }],
    rules: [{ id: 'single_trade_volume_cap', passed: !block }],
    latency_ms: 1.5,
    event_time_ms: 1_700_000_000_000 + i,
    decided_at_ms: 1_700_000_000_000 + i + 2,
    hook: 'tool_call',
    tool: 'execute_trade',
  });
}

async function main(): Promise<void> {
  const env = servicesEnv();
  const suffix = `${Date.now().toString(36)}_${process.pid}`;
  const prefix = `bench-sink-${suffix}`;
  const topics = topicNames(prefix);
  const kafka = new KafkaAdapter({ brokers: env.brokers, clientId: `bench-sink-${suffix}` });
  const admin = await kafka.admin();
  const sinkStore = new ClickHouseStore({ url: env.clickhouse, database: `steward_bench_sink_${suffix}` });
  const rawStore = new ClickHouseStore({ url: env.clickhouse, database: `steward_bench_raw_${suffix}` });
  const raw = createClient({ url: env.clickhouse, compression: { request: false, response: false } });
  let producer: StewardProducer | undefined;
  const profiler = PROFILE ? new Session() : undefined;
  try {
    await admin.createTopics([topics.decisions, topics.ledger, topics.dlq].map((topic) => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })));
    await migrate(sinkStore);
    await migrate(rawStore);
    producer = await kafka.producer();
    const texts = Array.from({ length: N }, (_, i) => message(i));
    for (let i = 0; i < N; i += 5_000) {
      await producer.send([{ topic: topics.decisions, messages: texts.slice(i, i + 5_000).map((value, j) => ({ key: `agent-${(i + j) % 200}`, value })) }]);
    }
    const high = await admin.topicOffsets(topics.decisions);
    if (high.reduce((n, p) => n + Number(p.high), 0) !== N) throw new Error('decisions topic does not hold N records');
    const rows = texts.map((t) => decisionRow(JSON.parse(t), 1));
    const tsv = tsvEncoder(DECISION_COLUMNS);
    const columns = Object.keys(DECISION_COLUMNS) as [string, ...string[]];
    // Warm-up of the raw paths (connections, JIT) outside the measurement.
    await raw.insert({ table: rawStore.table('decisions'), values: rows.slice(0, 1000), format: 'JSONEachRow' });
    await raw.insert({ table: rawStore.table('decisions'), values: Readable.from([tsv.encode(rows.slice(0, 1000))], { objectMode: false }), format: 'TabSeparated', columns });

    const ledger = new LedgerWriter(sinkStore, ed25519Signer(generateKeyPairSync('ed25519').privateKey));
    const deadLetter = (): Promise<void> => Promise.reject(new Error('bench: unexpected dead letter'));
    const ledgerProducer = producer;
    const publish = async (messages: LedgerDraftMessage[]) => ledgerProducer.send([{ topic: topics.ledger, messages }]);
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
    }

    /** One pass of the stage's consumer loop over the whole topic; seconds from group join to the last offset resolved. */
    const sinkRound = async (group: string, withDrafts: boolean): Promise<{ secs: number; inserts: number; cpuUs: number; others: number[] }> => {
      const sink = new ClickHouseSink(sinkStore, { maxRows: MAX_ROWS, maxInFlight: IN_FLIGHT, onPoison: async () => { throw new Error('bench: unexpected poison row'); } });
      const proc = new SinkProcessor(topics, sink, ledger, deadLetter, withDrafts ? publish : async () => {}, Date.now);
      const consumer = kafka.consumer({ groupId: group });
      let t0 = 0;
      let t1 = 0;
      let cpu0: NodeJS.CpuUsage | undefined;
      let cpuUs = 0;
      let others0: number[] = [];
      let others: number[] = [];
      let finished!: () => void;
      const done = new Promise<void>((r) => (finished = r));
      const loop = new SinkConsumerLoop(proc, { serialTopics: [topics.ledger, ...(SERIAL ? [topics.decisions] : [])], commitIntervalMs: COMMIT_MS, seek: (t, p, o) => consumer.seek(t, p, o) });
      consumer.onGroupJoin(() => {
        loop.onGroupJoin();
        if (!t0) {
          t0 = performance.now();
          cpu0 = process.cpuUsage();
          others0 = PIDS.map(([, pid]) => procCpuUs(pid));
        }
        if (profiler && HEAP) void profiler.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
        else if (profiler) void profiler.post('Profiler.start');
      });
      await consumer.subscribe([topics.decisions], true);
      // Clock stops when the committed offsets reach the end of every partition (the commit acknowledged).
      const lastOffset = new Map(high.map((p) => [p.partition, BigInt(p.high) - 1n]));
      let open = high.filter((p) => p.high !== '0').length;
      await consumer.runBatches(
        (batch, ctl) =>
          loop.handler(batch, {
            ...ctl,
            async commitOffset(offset: string) {
              await ctl.commitOffset?.(offset);
              if (BigInt(offset) === lastOffset.get(batch.partition) && --open === 0) {
                t1 = performance.now();
                const c = process.cpuUsage(cpu0);
                cpuUs = c.user + c.system;
                others = PIDS.map(([, pid], i) => procCpuUs(pid) - others0[i]);
                finished();
              }
            },
          }),
        { partitionsConcurrently: PARTITIONS, autoCommit: false },
      );
      await done;
      let profile: unknown;
      if (profiler && HEAP) profile = (await profiler.post('HeapProfiler.stopSampling')).profile;
      else if (profiler) profile = (await profiler.post('Profiler.stop')).profile;
      if (profile && PROFILE) writeFileSync(PROFILE.replace(/(\.cpuprofile)?$/, `.${group.slice(-2)}.cpuprofile`), JSON.stringify(profile));
      await loop.drain(10_000, () => sink.abort());
      await consumer.stop();
      await consumer.disconnect();
      const committed = await admin.groupOffsets(group, topics.decisions);
      for (const p of high) {
        if (committed.find((c) => c.partition === p.partition)?.offset !== p.high) throw new Error(`group ${group} did not commit partition ${p.partition} to ${p.high}`);
      }
      return { secs: (t1 - t0) / 1000, inserts: sink.stats.batches, cpuUs, others };
    };

    const rawSecs: number[] = [];
    const rawTsvSecs: number[] = [];
    const sinkSecs: number[] = [];
    const draftSecs: number[] = [];
    const cpuPerRow: number[] = [];
    const othersPerRow: number[][] = [];
    let inserts = 0;
    // Warm-up of the sink path (JIT, connections), like the raw baselines' warm-up above: one unmeasured pass.
    await sinkRound(`${prefix}-warm`, false);
    for (let round = 0; round < ROUNDS; round++) {
      let t = performance.now();
      for (let i = 0; i < N; i += RAW_BATCH) await raw.insert({ table: rawStore.table('decisions'), values: rows.slice(i, i + RAW_BATCH), format: 'JSONEachRow' });
      rawSecs.push((performance.now() - t) / 1000);
      t = performance.now();
      for (let i = 0; i < N; i += RAW_BATCH)
        await raw.insert({ table: rawStore.table('decisions'), values: Readable.from([tsv.encode(rows.slice(i, i + RAW_BATCH))], { objectMode: false }), format: 'TabSeparated', columns });
      rawTsvSecs.push((performance.now() - t) / 1000);

      const r = await sinkRound(`${prefix}-r${round}`, false);
      sinkSecs.push(r.secs);
      cpuPerRow.push(r.cpuUs / N);
      othersPerRow.push(r.others.map((us) => us / N));
      inserts += r.inserts;
      if (DRAFTS) draftSecs.push((await sinkRound(`${prefix}-d${round}`, true)).secs);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    // Every pass resolved (and committed) all N offsets only after their rows were inserted; each pass wrote the same N rows.
    const counted = await sinkStore.query<{ n: string }>(`SELECT uniqExact(trace_id) AS n FROM ${sinkStore.table('decisions')}`);
    if (Number(counted[0].n) !== N) throw new Error(`sink inserted ${counted[0].n} distinct rows, expected ${N}`);
    const rawRate = Math.round(N / median(rawSecs));
    const rawTsvRate = Math.round(N / median(rawTsvSecs));
    const sinkRate = Math.round(N / median(sinkSecs));
    const all = (xs: number[]) => xs.map((s) => Math.round(N / s)).join(',');
    process.stdout.write(`rows=${N} rounds=${ROUNDS} partitions=${PARTITIONS} inserts_per_round=${Math.round(inserts / ROUNDS)}\n`);
    process.stdout.write(`baseline_raw_insert_rows_per_sec=${rawRate}\n`);
    process.stdout.write(`baseline_raw_tsv_insert_rows_per_sec=${rawTsvRate}\n`);
    if (DRAFTS) process.stdout.write(`sink_with_ledger_drafts_rows_per_sec=${Math.round(N / median(draftSecs))} (rounds ${all(draftSecs)})\n`);
    process.stdout.write(`sink_node_cpu_us_per_row=${median(cpuPerRow).toFixed(2)} (load ${loadavg()[0].toFixed(1)})\n`);
    PIDS.forEach(([name], i) => process.stdout.write(`${name}_cpu_us_per_row=${median(othersPerRow.map((o) => o[i])).toFixed(2)}\n`));
    process.stdout.write(`sink_rounds_rows_per_sec=${all(sinkSecs)}\n`);
    process.stdout.write(`sink_vs_raw_tsv_insert=${(sinkRate / rawTsvRate).toFixed(3)}\n`);
    process.stdout.write(`sink_vs_raw_insert=${(sinkRate / rawRate).toFixed(3)}\n`);
    process.stdout.write(`sink_rows_per_sec=${sinkRate}\n`);
  } finally {
    profiler?.disconnect();
    await producer?.disconnect().catch(() => undefined);
    await admin.deleteTopics([topics.decisions, topics.ledger, topics.dlq]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await sinkStore.command(`DROP DATABASE IF EXISTS ${sinkStore.database}`).catch(() => undefined);
    await rawStore.command(`DROP DATABASE IF EXISTS ${rawStore.database}`).catch(() => undefined);
    await Promise.allSettled([sinkStore.close(), rawStore.close(), raw.close()]);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:sink failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
