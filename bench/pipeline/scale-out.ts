/**
 * bench:scale-out (issue #23): the join tripwire stage scaled out over processes against the same raw kafkajs
 * passthrough as bench:pipeline (bench/pipeline/raw-clients.ts), on the real Kafka of scripts/services.sh.
 * The traces topic has BENCH_SCALE_PARTITIONS (default 6) partitions, the passthrough reads the same count. For each
 * K of BENCH_SCALE_K (default 1,2,3) the stage runs as K processes of one consumer group (scale-out-child.ts, the
 * engine of bench/pipeline/engine.ts, each its own Redis key prefix), started and joined on an empty topic, then fed
 * BENCH_SCALE_WARMUP traces per process (default 4 000) until the group is stable with K members and all of them decided. The
 * measured window runs from the start of the fill of BENCH_SCALE_N (default 50 000) traces until the children's
 * processed counters (polled every 25 ms over stdin/stdout) add up to all of them: no start-up, group join or first
 * fetch in it, the sends of the fill (one producer in this
 * process, batches of 1 000 encoded beforehand) are. Rounds (BENCH_SCALE_ROUNDS, default 3)
 * each run a passthrough (fresh group over the same records) then every K (order reversed on odd rounds, so no K is
 * always first); each K's ratio is against its own round's passthrough, the summary takes medians. Printed per run:
 * msgs/s, the ratio, each process's CPU µs per trace it decided and its share of the traces, the same after the
 * fill's last send (the backlog's drain: full fetches, no producer alongside), and the load.
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { benchProcessEnv } from '../sink/services-env.js';
import { kafkajsPassthrough } from './raw-clients.js';
import { fill, produceBatches, traceBatches } from './traces.js';
import type { ChildSample } from './scale-out-child.js';
import { LineChild } from '../line-child.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const N = Number(process.env.BENCH_SCALE_N ?? 50_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_SCALE_ROUNDS ?? 3));
const PARTITIONS = Number(process.env.BENCH_SCALE_PARTITIONS ?? 6);
const KS = (process.env.BENCH_SCALE_K ?? '1,2,3').split(',').map(Number);
// Per process: each process JIT-compiles on its own; with 1 000 traces for the whole group (333 a process at K = 3) the
// measured CPU per trace was 104 µs at K = 3, 74 with 6 000 (docs/pipeline.md "Scale-out over processes").
const WARMUP_PER_PROCESS = Number(process.env.BENCH_SCALE_WARMUP ?? 4000);
const CHILD = fileURLToPath(new URL('./scale-out-child.ts', import.meta.url));

/** One stage process (scale-out-child.ts), spoken to one line at a time. */
class StageChild {
  private constructor(private readonly child: LineChild) {}

  static async start(raw: Record<string, unknown>, env: Record<string, string>): Promise<StageChild> {
    return new StageChild(await LineChild.start(['--import', 'tsx', CHILD, JSON.stringify(raw)], env, 'stage process'));
  }

  async sample(): Promise<ChildSample> {
    const v = await this.child.ask('sample');
    if (typeof v.processed !== 'number') throw new Error(`stage process did not answer a sample (${JSON.stringify(v)})`);
    return v as unknown as ChildSample;
  }

  stop(): Promise<void> {
    return this.child.stop();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  const h = Math.floor(v.length / 2);
  return v.length % 2 ? v[h]! : (v[h - 1]! + v[h]!) / 2;
};
const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);

/** Until `group` is Stable with `k` members (gives up after 90 s). */
async function stable(admin: Admin, group: string, k: number): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const g = (await admin.describeGroups([group])).groups[0];
    if (g?.state === 'Stable' && g.members.length === k) return;
    if (performance.now() - t0 > 90_000) throw new Error(`group ${group} not stable with ${k} members (${g?.state}, ${g?.members.length})`);
    await sleep(200);
  }
}

/** Until the children's processed counters add up to `n`; their samples then (gives up after 3 min). */
async function decided(children: StageChild[], n: number): Promise<ChildSample[]> {
  const t0 = performance.now();
  for (;;) {
    const s = await Promise.all(children.map((c) => c.sample()));
    if (sum(s.map((x) => x.processed)) >= n) return s;
    if (performance.now() - t0 > 180_000) throw new Error(`timed out at ${sum(s.map((x) => x.processed))}/${n}`);
    await sleep(25);
  }
}

interface KRun {
  rate: number;
  perProcess: { share: number; cpuPerTrace: number }[];
  cpuAllPerTrace: number;
  parentCpuPerTrace: number;
  fillMs: number;
  /** after the fill's last send: traces decided, their rate, all processes' CPU per trace */
  drain: { rate: number; n: number; cpuPerTrace: number };
  /** each partition's share of the traces (warm-up included): keys are agents, 30 of them */
  partitionShares: number[];
  load: string;
}

async function main(): Promise<void> {
  const env = benchProcessEnv();
  const prefix = `bench-so-${Date.now().toString(36)}`;
  const rawFor = (pfx: string) => ({
    topics: { prefix: pfx, partitions: PARTITIONS, reply_partitions: 1 },
    consumer: { group_prefix: pfx, scorer_input: 'join' },
    limits: { partitions_concurrently: PARTITIONS, chunk_size: Number(process.env.BENCH_CHUNK ?? 500), max_event_time_skew_ms: null },
    observability: { enabled: false },
  });
  const cfg = buildConfig(rawFor(prefix), env);
  const adapter = new KafkaAdapter(cfg.kafka);
  const sadmin = await adapter.admin();
  const kafka = new Kafka({ clientId: 'bench-scale-out', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const passIn = `${prefix}.pass-in`, passOut = `${prefix}.pass-out`;
  const created: string[] = [passIn, passOut];
  const live: StageChild[] = [];
  let from = 10_000_000;

  /** The join stage as `k` processes over fresh topics: one measured window (see the header). */
  async function stageRun(k: number, tag: string): Promise<KRun> {
    const pfx = `${prefix}${tag}`;
    const names = topicNames(pfx);
    created.push(...Object.values(names));
    await createTopics(sadmin, names, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
    const children = await Promise.all(Array.from({ length: k }, () => StageChild.start(rawFor(pfx), env)));
    live.push(...children);
    const WARMUP = WARMUP_PER_PROCESS * k;
    try {
      await stable(admin, `${pfx}-tripwire`, k);
      await fill(kafka, names.traces, WARMUP, from);
      from += WARMUP;
      await decided(children, WARMUP);
      await stable(admin, `${pfx}-tripwire`, k);
      // Encoded before the window: only the sends run alongside the stage processes.
      const batches = traceBatches(N, from);
      const s0 = await Promise.all(children.map((c) => c.sample()));
      const load0 = loadavg()[0]!;
      const p0 = process.cpuUsage();
      const t0 = performance.now();
      await produceBatches(kafka, names.traces, batches);
      const fillMs = performance.now() - t0;
      // The backlog left once every trace is on the topic: its drain is the stages' rate with full fetches.
      const sMid = await Promise.all(children.map((c) => c.sample()));
      const tMid = performance.now();
      from += N;
      const s1 = await decided(children, WARMUP + N);
      const tEnd = performance.now();
      const secs = (tEnd - t0) / 1000;
      const drained = sum(s1.map((s, i) => s.processed - sMid[i]!.processed));
      const drain = { rate: drained / ((tEnd - tMid) / 1000), n: drained, cpuPerTrace: sum(s1.map((s, i) => s.cpuUs - sMid[i]!.cpuUs)) / drained };
      const pc = process.cpuUsage(p0);
      const ends = (await admin.fetchTopicOffsets(names.traces)).sort((a, b) => a.partition - b.partition);
      const partitionShares = ends.map((o) => Number(o.high) / (WARMUP + N));
      const perProcess = s1.map((s, i) => {
        const n = s.processed - s0[i]!.processed;
        return { share: n / N, cpuPerTrace: n > 0 ? (s.cpuUs - s0[i]!.cpuUs) / n : NaN };
      });
      const cpuAll = sum(s1.map((s, i) => s.cpuUs - s0[i]!.cpuUs));
      return { rate: N / secs, perProcess, cpuAllPerTrace: cpuAll / N, parentCpuPerTrace: (pc.user + pc.system) / N, fillMs, drain, partitionShares, load: `${load0.toFixed(2)}/${loadavg()[0]!.toFixed(2)}` };
    } finally {
      await Promise.all(children.map((c) => c.stop()));
      live.splice(0, live.length, ...live.filter((c) => !children.includes(c)));
    }
  }

  try {
    await admin.createTopics({ topics: [passIn, passOut].map((topic) => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })) });
    await fill(kafka, passIn, N);
    const passes: number[] = [];
    const runs = new Map<number, { run: KRun; pass: number }[]>(KS.map((k) => [k, []]));
    for (let r = 0; r < ROUNDS; r++) {
      const load0 = loadavg()[0]!;
      const c0 = process.cpuUsage();
      const pass = await kafkajsPassthrough(kafka, passIn, passOut, N, PARTITIONS, undefined, `${passIn}-pass${r}`);
      const pc = process.cpuUsage(c0);
      passes.push(pass);
      console.log(`round=${r + 1}/${ROUNDS} passthrough_msgs_per_s=${pass.toFixed(0)} cpu_us_per_msg=${((pc.user + pc.system) / N).toFixed(1)} load=${load0.toFixed(2)}/${loadavg()[0]!.toFixed(2)}`);
      for (const k of r % 2 ? [...KS].reverse() : KS) {
        const run = await stageRun(k, `k${k}r${r}`);
        runs.get(k)!.push({ run, pass });
        console.log(
          `round=${r + 1}/${ROUNDS} K=${k} join_tripwire_msgs_per_s=${run.rate.toFixed(0)} ratio=${(run.rate / pass).toFixed(3)} ` +
            `per_process(share,cpu_us_per_trace)=${run.perProcess.map((p) => `${(p.share * 100).toFixed(0)}%,${p.cpuPerTrace.toFixed(1)}`).join(' ')} ` +
            `cpu_us_per_trace_all_processes=${run.cpuAllPerTrace.toFixed(1)} parent_fill_cpu_us_per_trace=${run.parentCpuPerTrace.toFixed(1)} fill_ms=${run.fillMs.toFixed(0)} after_fill(n,msgs_per_s,ratio,cpu_us_per_trace_all)=${run.drain.n},${run.drain.rate.toFixed(0)},${(run.drain.rate / pass).toFixed(3)},${run.drain.cpuPerTrace.toFixed(1)} partition_shares=${run.partitionShares.map((x) => (x * 100).toFixed(0)).join('/')}% load=${run.load}`,
        );
      }
    }
    console.log(`scale_out n=${N} partitions=${PARTITIONS} rounds=${ROUNDS} warmup_per_process=${WARMUP_PER_PROCESS} passthrough_msgs_per_s=${median(passes).toFixed(0)} (median) cpus=${(await import('node:os')).cpus().length}`);
    for (const k of KS) {
      const rs = runs.get(k)!;
      console.log(
        `scale_out K=${k} join_tripwire_msgs_per_s=${median(rs.map((x) => x.run.rate)).toFixed(0)} ratio=${median(rs.map((x) => x.run.rate / x.pass)).toFixed(3)} ` +
          `cpu_us_per_trace_per_process=${median(rs.flatMap((x) => x.run.perProcess.map((p) => p.cpuPerTrace))).toFixed(1)} cpu_us_per_trace_all=${median(rs.map((x) => x.run.cpuAllPerTrace)).toFixed(1)} after_fill_ratio=${median(rs.map((x) => x.run.drain.rate / x.pass)).toFixed(3)} after_fill_cpu_us_per_trace_all=${median(rs.map((x) => x.run.drain.cpuPerTrace)).toFixed(1)} (medians of ${rs.length})`,
      );
    }
    console.log(`load=${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`scale_out_vs_passthrough=${KS.map((k) => `k${k}:${median(runs.get(k)!.map((x) => x.run.rate / x.pass)).toFixed(3)}`).join(' ')}`);
  } finally {
    await Promise.all(live.map((c) => c.stop()));
    await admin.deleteTopics({ topics: created }).catch(() => undefined);
    await admin.disconnect();
    await sadmin.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
