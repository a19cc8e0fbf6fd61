/**
 * The whole sink stage (one bounded run) on the real Kafka and ClickHouse of scripts/services.sh: decision
 * records already on a Kafka topic go through `startSinkStage` exactly as `steward run --stages sink` runs it —
 * decisions table, a POLICY_DECISION draft per decision published to acgp.ledger, the ledger topic consumed
 * back, hash-chained, Ed25519-signed per entry (ACM §11) and inserted. bench:sink's `sink_rows_per_sec` is
 * the decisions path alone; this is what a deployment gets per decision once the ledger is included.
 *
 * Same run, alternating rounds (medians; the machine is shared): signatures on the stage's signing threads
 * (the default) against signing one by one on the stage's own thread (`signThreads: 0`). The clock runs from
 * the consumer's group join until every decision and every ledger entry is queryable. `main_loop_busy` is the
 * event-loop utilisation of this process over that window: the headroom the signing threads give the stage on
 * machines with cores to spare (this one has two, shared with Kafka and ClickHouse).
 * Prints `sink_stage_decisions_per_sec=<n>` last.
 */
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { topicNames } from '../../src/adapters/kafka/topics.js';
import { ClickHouseStore } from '../../src/adapters/clickhouse/client.js';
import { migrate } from '../../src/adapters/clickhouse/migrations.js';
import { ledgerSignerFrom } from '../../src/adapters/clickhouse/ledger-keys.js';
import { startSinkStage } from '../../src/process/sink-stage.js';
import { createLogger } from '../../src/logger.js';
import { servicesEnv } from './services-env.js';

const N = Number(process.env.BENCH_SINK_STAGE_DECISIONS ?? 30_000);
const ROUNDS = Number(process.env.BENCH_SINK_STAGE_ROUNDS ?? 2);
const PARTITIONS = 6;

const message = (i: number): string =>
  JSON.stringify({
    trace_id: `bench-${i}`, agent_id: `agent-${i % 200}`, tenant: 'acme', blueprint: 'finance/trading_bot@1.0',
    intervention: i % 7 ? 'ok' : 'block', approved: i % 7 !== 0, stage: i % 7 ? 'none' : 'rule', halted: false,
    reasons: i % 7 ? [] : ['single trade over the cap'], tripwires: [{ id: 'trade_size_limit', fired: false }],
    rules: [{ id: 'single_trade_volume_cap', passed: i % 7 !== 0 }], latency_ms: 1.5,
    event_time_ms: 1_700_000_000_000 + i, decided_at_ms: 1_700_000_000_002 + i, hook: 'tool_call', tool: 'execute_trade',
  });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function round(env: ReturnType<typeof servicesEnv>, tag: string, signThreads: number | undefined): Promise<{ rate: number; busy: number }> {
  const sfx = `${Date.now().toString(36)}_${tag}`;
  const prefix = `bench-sinkstage-${sfx}`;
  const topics = topicNames(prefix);
  const own = [topics.decisions, topics.verdicts, topics.ledger, topics.trustDebt, topics.gate, topics.dlq];
  const kafka = new KafkaAdapter({ brokers: env.brokers, clientId: prefix });
  const admin = await kafka.admin();
  const store = new ClickHouseStore({ url: env.clickhouse, database: `steward_bench_stage_${sfx}` });
  try {
    await admin.createTopics(own.map((topic) => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })));
    await migrate(store);
    const producer = await kafka.producer();
    for (let i = 0; i < N; i += 5000) {
      await producer.send([{ topic: topics.decisions, messages: Array.from({ length: Math.min(5000, N - i) }, (_, j) => ({ key: `agent-${(i + j) % 200}`, value: message(i + j) })) }]);
    }
    await producer.disconnect();
    const signer = ledgerSignerFrom(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    const sink = await startSinkStage({ kafka: { brokers: env.brokers, clientId: `${prefix}-sink` }, topicPrefix: prefix, groupId: `${prefix}-sink`, clickhouse: { url: env.clickhouse, database: store.database }, signer, signThreads, logger: createLogger({ level: 'warn' }), migrate: false });
    try {
      while (!sink.isReady()) await new Promise((r) => setTimeout(r, 5));
      const elu0 = performance.eventLoopUtilization();
      const t0 = performance.now();
      for (;;) {
        const [d] = await store.query<{ n: string }>(`SELECT uniqExact(trace_id) AS n FROM ${store.table('decisions')}`);
        const [l] = await store.query<{ n: string }>(`SELECT uniqExact(entry_id) AS n FROM ${store.table('ledger')}`);
        if (Number(d!.n) >= N && Number(l!.n) >= N) break;
        if (performance.now() - t0 > 300_000) throw new Error(`timed out at ${d!.n} decisions / ${l!.n} ledger entries of ${N}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const secs = (performance.now() - t0) / 1000;
      return { rate: Math.round(N / secs), busy: performance.eventLoopUtilization(elu0).utilization };
    } finally {
      await sink.stop();
    }
  } finally {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`).catch(() => undefined);
    await store.close();
    await admin.deleteTopics(own).catch(() => undefined);
    await admin.disconnect();
  }
}

async function main(): Promise<void> {
  const env = servicesEnv();
  const pooled: { rate: number; busy: number }[] = [];
  const inline: { rate: number; busy: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    inline.push(await round(env, `i${r}`, 0));
    pooled.push(await round(env, `p${r}`, undefined));
  }
  const p = median(pooled.map((x) => x.rate));
  const i = median(inline.map((x) => x.rate));
  process.stdout.write(`decisions=${N} rounds=${ROUNDS} partitions=${PARTITIONS} (each decision: a decisions row + a signed ledger entry)\n`);
  process.stdout.write(`sink_stage_inline_signing_decisions_per_sec=${i} (rounds ${inline.map((x) => x.rate).join(',')}; main_loop_busy ${inline.map((x) => x.busy.toFixed(2)).join(',')})\n`);
  process.stdout.write(`sink_stage_signing_threads_decisions_per_sec=${p} (rounds ${pooled.map((x) => x.rate).join(',')}; main_loop_busy ${pooled.map((x) => x.busy.toFixed(2)).join(',')})\n`);
  process.stdout.write(`signing_threads_vs_inline=${(p / i).toFixed(2)}\n`);
  process.stdout.write(`sink_stage_decisions_per_sec=${p}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
