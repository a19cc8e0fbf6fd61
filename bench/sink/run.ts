/**
 * Sink benchmark (one bounded run) on the real ClickHouse of scripts/services.sh.
 *  - sink path: Kafka record bytes → JSON.parse → decisionRow() → ClickHouseSink.write() (serialises each write
 *    to TabSeparated at once, batches by size/time, inserts in flight, several partitions writing
 *    concurrently) → ClickHouseStore.insertEncoded (HTTP POST), awaited like the consumer does. Not
 *    included: Kafka fetch/commit and the POLICY_DECISION draft the stage also builds and produces per decision;
 *  - baseline: the same pre-mapped rows inserted with a raw @clickhouse/client JSONEachRow insert in chunks of
 *    the same size (the ratio is against this one); second baseline: the same client inserting the same rows
 *    as TabSeparated (encoded by the sink's encoder inside the timing).
 * Both into the same table layout (fresh databases, dropped afterwards), alternating over rounds (medians);
 * the parse+map cost alone is printed too. Prints the ratio and
 * `sink_rows_per_sec=<n>` last.
 */
import { execFileSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { createClient } from '@clickhouse/client';
import { ClickHouseStore } from '../../src/adapters/clickhouse/client.js';
import { migrate } from '../../src/adapters/clickhouse/migrations.js';
import { DECISION_COLUMNS, decisionRow } from '../../src/adapters/clickhouse/rows.js';
import { ClickHouseSink } from '../../src/adapters/clickhouse/sink.js';
import { tsvEncoder } from '../../src/adapters/clickhouse/tsv.js';

const N = Number(process.env.BENCH_SINK_ROWS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_SINK_ROUNDS ?? 3);
// maxRows must not exceed what the awaiting handlers can have outstanding (PARTITIONS × KAFKA_BATCH = 12 000),
// or every insert waits for maxDelayMs.
// The sink's default (6 000, half of that: one batch fills while the other is inserted).
const BATCH = Number(process.env.BENCH_SINK_BATCH ?? 6_000);
const KAFKA_BATCH = 2000; // records per kafkajs eachBatch call (one partition; ~1 MB of the default 4 MB fetch)
const PARTITIONS = 6;
const IN_FLIGHT = Number(process.env.BENCH_SINK_INFLIGHT ?? 2); // the sink's default

function clickhouseUrl(): string {
  if (process.env.CLICKHOUSE_URL) return process.env.CLICKHOUSE_URL;
  const out = execFileSync('bash', ['scripts/services.sh', 'env'], { encoding: 'utf8' });
  return /CLICKHOUSE_URL=(\S+)/.exec(out)?.[1] ?? 'http://127.0.0.1:18123';
}

function message(i: number): Buffer {
  const block = i % 7 === 0;
  return Buffer.from(
    JSON.stringify({
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
    }),
  );
}

async function main(): Promise<void> {
  const url = clickhouseUrl();
  const suffix = `${Date.now().toString(36)}_${process.pid}`;
  const sinkStore = new ClickHouseStore({ url, database: `steward_bench_sink_${suffix}` });
  const rawStore = new ClickHouseStore({ url, database: `steward_bench_raw_${suffix}` });
  const raw = createClient({ url, compression: { request: false, response: false } });
  try {
    await migrate(sinkStore);
    await migrate(rawStore);
    const msgs = Array.from({ length: N }, (_, i) => message(i));
    const rows = msgs.map((m) => decisionRow(JSON.parse(m.toString('utf8')), 1));
    // Warm-up both paths (connections, JIT) on a few rows outside the measurement.
    await raw.insert({ table: rawStore.table('decisions'), values: rows.slice(0, 1000), format: 'JSONEachRow' });
    await sinkStore.insert('decisions', rows.slice(0, 1000));

    const tsv = tsvEncoder(DECISION_COLUMNS);
    const columns = Object.keys(DECISION_COLUMNS) as [string, ...string[]];
    await raw.insert({ table: rawStore.table('decisions'), values: Readable.from([tsv.encode(rows.slice(0, 1000))], { objectMode: false }), format: 'TabSeparated', columns });
    // Alternate the paths over ROUNDS rounds and take medians: the machine is shared, load drifts.
    const rawSecs: number[] = [];
    const rawTsvSecs: number[] = [];
    const sinkSecs: number[] = [];
    const mapSecs: number[] = [];
    let batches = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let t = performance.now();
      for (let i = 0; i < N; i += BATCH) await raw.insert({ table: rawStore.table('decisions'), values: rows.slice(i, i + BATCH), format: 'JSONEachRow' });
      rawSecs.push((performance.now() - t) / 1000);

      t = performance.now();
      for (let i = 0; i < N; i += BATCH)
        await raw.insert({ table: rawStore.table('decisions'), values: Readable.from([tsv.encode(rows.slice(i, i + BATCH))], { objectMode: false }), format: 'TabSeparated', columns });
      rawTsvSecs.push((performance.now() - t) / 1000);

      t = performance.now();
      for (const m of msgs) decisionRow(JSON.parse(m.toString('utf8')), 1);
      mapSecs.push((performance.now() - t) / 1000);

      const sink = new ClickHouseSink(sinkStore, { maxRows: BATCH, maxDelayMs: 100, maxInFlight: IN_FLIGHT, onPoison: async () => {} });
      t = performance.now();
      // PARTITIONS concurrent "partition handlers", each awaiting its batch like the consumer does.
      await Promise.all(
        Array.from({ length: PARTITIONS }, async (_, p) => {
          for (let start = p * KAFKA_BATCH; start < N; start += PARTITIONS * KAFKA_BATCH) {
            const now = Date.now();
            const items = msgs.slice(start, start + KAFKA_BATCH).map((m) => ({ row: decisionRow(JSON.parse(m.toString('utf8')), now), source: m }));
            await sink.write('decisions', items);
          }
        }),
      );
      sinkSecs.push((performance.now() - t) / 1000);
      batches += sink.stats.batches;
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const rawSec = median(rawSecs);
    const sinkSec = median(sinkSecs);
    const mapSec = median(mapSecs);
    const counted = await sinkStore.query<{ n: string }>(`SELECT count() AS n FROM ${sinkStore.table('v_decisions')}`);
    if (Number(counted[0].n) !== N) throw new Error(`sink inserted ${counted[0].n} distinct rows, expected ${N}`);
    const rawRate = Math.round(N / rawSec);
    const rawTsvRate = Math.round(N / median(rawTsvSecs));
    const sinkRate = Math.round(N / sinkSec);
    process.stdout.write(`rows=${N} rounds=${ROUNDS} batch=${BATCH} partitions=${PARTITIONS} in_flight=${IN_FLIGHT} inserts_per_round=${Math.round(batches / ROUNDS)}\n`);
    process.stdout.write(`parse_and_map_rows_per_sec=${Math.round(N / mapSec)}\n`);
    process.stdout.write(`baseline_raw_insert_rows_per_sec=${rawRate}\n`);
    process.stdout.write(`baseline_raw_tsv_insert_rows_per_sec=${rawTsvRate}\n`);
    process.stdout.write(`sink_vs_raw_tsv_insert=${(sinkRate / rawTsvRate).toFixed(3)}\n`);
    process.stdout.write(`sink_vs_raw_insert=${(sinkRate / rawRate).toFixed(3)}\n`);
    process.stdout.write(`sink_rows_per_sec=${sinkRate}\n`);
  } finally {
    await sinkStore.command(`DROP DATABASE IF EXISTS ${sinkStore.database}`).catch(() => undefined);
    await rawStore.command(`DROP DATABASE IF EXISTS ${rawStore.database}`).catch(() => undefined);
    await Promise.allSettled([sinkStore.close(), rawStore.close(), raw.close()]);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:sink failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
