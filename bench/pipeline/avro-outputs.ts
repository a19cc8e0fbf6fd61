/**
 * Decisions and verdicts as JSON (what the stages write) vs Avro in the Confluent wire format
 * (src/adapters/kafka/output-avro.ts, schemas/avro): bytes per record, CPU to encode (the stage's side: object →
 * record value) and to decode (a reader's side), on the bench's real decisions and verdicts (repository
 * blueprints, Redis state; no LLM). In-process, no Kafka: the produce path's cost per byte is what
 * bench:pipeline and profile.ts measure. Prints `<what>_avro_vs_json=<ratio>` lines (below 1: Avro cheaper).
 * Then the sink's side (`sink_<what>_cpu_avro_vs_json`): SinkProcessor over batches of 500 records into a sink that
 * keeps nothing — JSON through its byte scanner, Avro decoded (writer schema from the real registry), mapped to
 * rows and TSV-encoded as ClickHouseSink does.
 */
import { benchProcessEnv } from '../sink/services-env.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { decisionMessage, verdictMessage } from '../../src/contracts/engine-records.js';
import { decisionCodec, verdictCodec } from '../../src/adapters/kafka/output-avro.js';
import type { DecisionMessage, VerdictMessage } from '../../src/contracts/messages.js';
import { demoTrace } from '../../src/demo/agents.js';
import { benchEngineDeps, BENCH_AGENTS } from './engine.js';
import { createRegistry, registerAvro } from '../../src/adapters/kafka/serde.js';
import { OutputDecoder } from '../../src/adapters/kafka/output-decoder.js';
import { SinkProcessor } from '../../src/consumers/sink-processor.js';
import { topicNames } from '../../src/adapters/kafka/topics.js';
import type { InMessage } from '../../src/adapters/kafka/client.js';
import type { ClickHouseSink, SinkItem } from '../../src/adapters/clickhouse/sink.js';
import { DECISION_COLUMNS, VERDICT_COLUMNS } from '../../src/adapters/clickhouse/tables.js';
import { tsvEncoder, type TsvEncoder } from '../../src/adapters/clickhouse/tsv.js';
import type { LedgerWriter } from '../../src/adapters/clickhouse/ledger-store.js';

const SINK_ROUNDS = Number(process.env.BENCH_AVRO_SINK_ROUNDS ?? 200);

const TSV: Record<string, TsvEncoder> = { decisions: tsvEncoder(DECISION_COLUMNS), verdicts: tsvEncoder(VERDICT_COLUMNS) };

/**
 * CPU µs per record of SinkProcessor.process over `values` (batches of 500) into a sink that keeps nothing but
 * encodes handed row objects to TSV as ClickHouseSink does at its flush (encoded lines arrive as TSV already).
 */
async function sinkCpu(topic: string, values: Buffer[], outputs: OutputDecoder): Promise<number> {
  const topics = topicNames('bench');
  const write = async (table: string, items: SinkItem[]) => void TSV[table]!.encode(items.map((i) => i.row));
  const sink = { encodesLines: true, withRetry: (_: string, fn: () => Promise<unknown>) => fn(), expedites: () => false, write, writeEncoded: async () => {} } as unknown as ClickHouseSink;
  const proc = new SinkProcessor(topics, sink, {} as LedgerWriter, async () => {}, async () => {}, () => 1, undefined, undefined, undefined, outputs);
  const t = topic === 'decisions' ? topics.decisions : topics.verdicts;
  const batch = (k: number): InMessage[] => Array.from({ length: 500 }, (_, i) => ({ topic: t, partition: 0, offset: String(k * 500 + i), key: null, value: values[(k * 500 + i) % values.length]!, headers: {}, timestampMs: 0 }));
  for (let k = 0; k < 20; k++) await proc.process(batch(k));
  const c0 = process.cpuUsage();
  for (let k = 0; k < SINK_ROUNDS; k++) await proc.process(batch(k));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / (SINK_ROUNDS * 500);
}

const N = Number(process.env.BENCH_AVRO_N ?? 200_000);
const SAMPLE = 300;

function timeUs(n: number, fn: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(n, 20_000); i++) fn(i);
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn(i);
  const c = process.cpuUsage(t0);
  return (c.user + c.system) / n;
}

async function main(): Promise<void> {
  const cfg = buildConfig({ observability: { enabled: false } }, benchProcessEnv());
  const { deps, close } = await benchEngineDeps(cfg);
  const decisions: DecisionMessage[] = [];
  const verdicts: VerdictMessage[] = [];
  try {
    for (let i = 0; i < SAMPLE; i++) {
      const a = BENCH_AGENTS[i % BENCH_AGENTS.length];
      const t = demoTrace(a.type, i, 3, Date.UTC(2026, 0, 1) + i * 60_000, 'avro', a.id);
      const rec = await deps.engine!.decide(t, Date.parse(t.timestamp));
      const d = decisionMessage(rec, t, Date.parse(t.timestamp), Date.now(), '0.1.0');
      decisions.push(d);
      if (!d.halted) verdicts.push(verdictMessage(await deps.engine!.score(t, rec, Date.parse(t.timestamp)), d, Date.now()));
    }
  } finally {
    await close();
  }
  const report = (what: string, msgs: { length: number }, enc: { json: (i: number) => Buffer; avro: (i: number) => Buffer }, dec: { json: (b: Buffer) => unknown; avro: (b: Buffer) => unknown }) => {
    const n = msgs.length;
    const jsonBufs = Array.from({ length: n }, (_, i) => enc.json(i));
    const avroBufs = Array.from({ length: n }, (_, i) => enc.avro(i));
    const bytes = (bs: Buffer[]) => bs.reduce((a, b) => a + b.length, 0) / bs.length;
    const jb = bytes(jsonBufs), ab = bytes(avroBufs);
    const je = timeUs(N, (i) => enc.json(i % n)), ae = timeUs(N, (i) => enc.avro(i % n));
    const jd = timeUs(N, (i) => dec.json(jsonBufs[i % n])), ad = timeUs(N, (i) => dec.avro(avroBufs[i % n]));
    console.log(`${what}: bytes json=${jb.toFixed(0)} avro=${ab.toFixed(0)}; encode_us json=${je.toFixed(2)} avro=${ae.toFixed(2)}; decode_us json=${jd.toFixed(2)} avro=${ad.toFixed(2)} (${n} distinct records, ${N} rounds)`);
    console.log(`${what}_bytes_avro_vs_json=${(ab / jb).toFixed(3)}`);
    console.log(`${what}_encode_avro_vs_json=${(ae / je).toFixed(3)}`);
    console.log(`${what}_decode_avro_vs_json=${(ad / jd).toFixed(3)}`);
  };
  // Real schema ids (the sink side looks them up by id), under subjects of this run, deleted after.
  const registry = createRegistry(cfg.schemaRegistryUrl!);
  const subjects = [`bench-avro-${Date.now().toString(36)}.decisions-value`, `bench-avro-${Date.now().toString(36)}.verdicts-value`];
  const dc = decisionCodec(await registerAvro(registry, 'decision', subjects[0]!)), vc = verdictCodec(await registerAvro(registry, 'verdict', subjects[1]!));
  report('decision', decisions, { json: (i) => Buffer.from(JSON.stringify(decisions[i])), avro: (i) => dc.encode(decisions[i]) }, { json: (b) => JSON.parse(b.toString('utf8')), avro: (b) => dc.decode(b) });
  report('verdict', verdicts, { json: (i) => Buffer.from(JSON.stringify(verdicts[i])), avro: (i) => vc.encode(verdicts[i]) }, { json: (b) => JSON.parse(b.toString('utf8')), avro: (b) => vc.decode(b) });
  try {
    const outputs = new OutputDecoder(registry);
    for (const [what, msgs, enc] of [['decision', decisions, (m: DecisionMessage) => dc.encode(m)], ['verdict', verdicts, (m: VerdictMessage) => vc.encode(m)]] as const) {
      const json = msgs.map((m) => Buffer.from(JSON.stringify(m)));
      const avroValues = (msgs as (DecisionMessage | VerdictMessage)[]).map((m) => (enc as (x: typeof m) => Buffer)(m));
      const topic = what === 'decision' ? 'decisions' : 'verdicts';
      const j = await sinkCpu(topic, json, outputs), a = await sinkCpu(topic, avroValues, outputs);
      console.log(`sink_${what}: cpu_us json=${j.toFixed(2)} avro=${a.toFixed(2)} (${SINK_ROUNDS * 500} records)`);
      console.log(`sink_${what}_cpu_avro_vs_json=${(a / j).toFixed(3)}`);
    }
  } finally {
    for (const subject of subjects) {
      const base = `${cfg.schemaRegistryUrl}/subjects/${encodeURIComponent(subject)}`;
      await fetch(base, { method: 'DELETE' }).catch(() => undefined);
      await fetch(`${base}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
    }
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
