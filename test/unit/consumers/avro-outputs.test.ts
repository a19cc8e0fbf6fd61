// Every reader of acgp.decisions and acgp.verdicts takes JSON and Avro records on the same topic (topics.avro_outputs,
// docs/pipeline.md "Serde"), and the writers encode the topic's records in Avro when it is selected.
import { describe, expect, it } from 'vitest';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { readAvroSchema, TraceDecoder } from '../../../src/adapters/kafka/serde.js';
import { OutputDecoder } from '../../../src/adapters/kafka/output-decoder.js';
import { decisionCodec, verdictCodec } from '../../../src/adapters/kafka/output-avro.js';
import type { ClickHouseSink, SinkItem } from '../../../src/adapters/clickhouse/sink.js';
import type { LedgerWriter } from '../../../src/adapters/clickhouse/ledger-store.js';
import type { LedgerDraftMessage } from '../../../src/adapters/clickhouse/decision-writer.js';
import { DECISION_COLUMNS, VERDICT_COLUMNS } from '../../../src/adapters/clickhouse/tables.js';
import { tsvEncoder } from '../../../src/adapters/clickhouse/tsv.js';
import { SinkProcessor } from '../../../src/consumers/sink-processor.js';
import { TrustDebtProcessor } from '../../../src/consumers/trust-debt.js';
import { parseDecision } from '../../../src/consumers/scorer-join.js';
import { TripwireProcessor } from '../../../src/consumers/tripwire.js';
import { scoreOne } from '../../../src/consumers/scorer.js';
import { decisionMessage, decisionInputOf, verdictMessage } from '../../../src/contracts/engine-records.js';
import type { DecisionMessage, VerdictMessage } from '../../../src/contracts/messages.js';
import { DEFAULT_TRUST_DEBT_CONFIG, MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { StewardError } from '../../../src/errors.js';
import { REPLY_HEADERS } from '../../../src/adapters/kafka/request-reply.js';
import { blockedRecord, scoreRecord, shellTrace } from './fixtures.js';
import { stubRegistry } from '../../support/stub-registry.js';

const topics = topicNames('t');
const DID = 21;
const VID = 22;
const registry = (state: { down?: boolean; lookups?: number } = {}) => stubRegistry({ [DID]: readAvroSchema('decision'), [VID]: readAvroSchema('verdict'), 5: readAvroSchema('trace') }, state);
const dc = decisionCodec(DID);
const vc = verdictCodec(VID);

/** Decisions and verdicts of traces t-0 … t-(n-1), varied (halted, ok, with optional fields or without). */
function outputs(n: number): { d: DecisionMessage; v: VerdictMessage }[] {
  return Array.from({ length: n }, (_, i) => {
    const trace = { ...shellTrace, trace_id: `t-${i}`, session_id: i % 3 === 0 ? undefined : 's1' };
    const rec = blockedRecord({ traceId: trace.trace_id, halted: i % 4 === 1, intervention: i % 2 ? 'block' : 'ok', eventId: `t-${i}#e`, degraded: i === 5 ? true : undefined });
    const d = decisionMessage(rec, trace, 1767225600000 + i, 1767225600100 + i, '0.1.0');
    return { d, v: verdictMessage(scoreRecord({ traceId: trace.trace_id, intervention: i % 3 ? 'flag' : 'ok', ctq: 0.5 + i / 100 }), d, 1767225600200 + i) };
  });
}

let offset = 0;
const rec = (topic: string, value: Buffer, partition = 0): InMessage => ({ topic, partition, offset: String(offset++), key: Buffer.from('a1'), value, headers: {}, timestampMs: 1767225600000 });
const json = (o: object) => Buffer.from(JSON.stringify(o));

/** A sink that keeps what it is handed, as TSV lines per table (scanned bytes and parsed rows alike). */
function sinkProc(outputsDecoder: OutputDecoder) {
  const lines: Record<string, string[]> = { decisions: [], verdicts: [] };
  const enc = { decisions: tsvEncoder(DECISION_COLUMNS), verdicts: tsvEncoder(VERDICT_COLUMNS) };
  const split = (t: string) => t.split('\n').filter(Boolean);
  const sink = {
    encodesLines: true,
    withRetry: (_: string, fn: () => Promise<unknown>) => fn(),
    expedites: () => false,
    write: async (table: 'decisions' | 'verdicts', items: SinkItem[]) => void lines[table].push(...split(enc[table].encode(items.map((i) => i.row) as never))),
    writeEncoded: async (table: 'decisions' | 'verdicts', body: Buffer) => void lines[table].push(...split(body.toString('utf8'))),
  } as unknown as ClickHouseSink;
  const drafts: string[] = [];
  const dead: { offset: string; code: string; message: string }[] = [];
  const proc = new SinkProcessor(topics, sink, {} as LedgerWriter, async (m, e) => void dead.push({ offset: m.offset, code: e.code, message: e.message }), async (ms: LedgerDraftMessage[]) => void drafts.push(...ms.map((m) => String(m.value))), () => 7, undefined, undefined, undefined, outputsDecoder);
  return { proc, lines, drafts, dead };
}

describe('sink: decisions and verdicts in JSON and Avro', () => {
  it('a mixed stream gives the same rows and the same ledger drafts, in the same order, as the all-JSON one', async () => {
    const xs = outputs(12);
    const allJson = sinkProc(new OutputDecoder(registry()));
    await allJson.proc.process([...xs.map((x) => rec(topics.decisions, json(x.d))), ...xs.map((x) => rec(topics.verdicts, json(x.v)))]);
    const state = { lookups: 0 };
    const mixed = sinkProc(new OutputDecoder(registry(state)));
    // JSON first, then Avro (a switch mid-stream), and back: both kinds interleaved.
    await mixed.proc.process([...xs.map((x, i) => rec(topics.decisions, i < 4 || i > 9 ? json(x.d) : dc.encode(x.d))), ...xs.map((x, i) => rec(topics.verdicts, i % 2 ? vc.encode(x.v) : json(x.v)))]);
    expect(state.lookups).toBe(2); // one per schema id, not per record
    expect(mixed.dead).toEqual([]);
    expect(allJson.lines.decisions).toHaveLength(12);
    expect(allJson.lines.verdicts).toHaveLength(12);
    expect([...mixed.lines.decisions].sort()).toEqual([...allJson.lines.decisions].sort());
    expect([...mixed.lines.verdicts].sort()).toEqual([...allJson.lines.verdicts].sort());
    expect(mixed.drafts).toEqual(allJson.drafts); // the ledger chains the same entries in the same order
  });

  it('dead-letters a record whose schema id the registry does not know (the rest are stored); a registry outage fails the batch, retryable', async () => {
    const [x, y] = outputs(2);
    const s = sinkProc(new OutputDecoder(registry()));
    const unknown = rec(topics.decisions, decisionCodec(404).encode(x.d));
    const notADecision = rec(topics.decisions, decisionCodec(5).encode(y.d));
    await s.proc.process([rec(topics.decisions, dc.encode(y.d)), unknown, notADecision, rec(topics.verdicts, vc.encode(x.v))]);
    expect(s.dead).toEqual([
      { offset: unknown.offset, code: 'STEWARD_OUTPUT_AVRO', message: 'unknown Avro schema id 404' },
      { offset: notADecision.offset, code: 'STEWARD_OUTPUT_AVRO', message: expect.stringMatching(/schema id 5 is not a decision schema/) },
    ]);
    expect([s.lines.decisions.length, s.lines.verdicts.length]).toEqual([1, 1]);
    const down = sinkProc(new OutputDecoder(registry({ down: true })));
    const err = await down.proc.process([rec(topics.decisions, dc.encode(x.d))]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StewardError);
    expect(err).toMatchObject({ code: 'STEWARD_KAFKA', retryable: true });
    expect(down.dead).toEqual([]);
    // JSON-only batches never ask the registry (the JSON default costs nothing new).
    expect(await down.proc.process([rec(topics.decisions, json(x.d))])).toBe(false);
  });
});

describe('trust-debt stage and scorer join: decisions and verdicts in JSON and Avro', () => {
  const td = () =>
    new TrustDebtProcessor({ store: new MemoryTrustDebtStore(), configFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), outputs: new OutputDecoder(registry()) });

  it('the trust-debt stage moves debt alike for JSON and Avro verdicts and halted decisions', async () => {
    const xs = outputs(8);
    const a = td();
    const b = td();
    const viaJson: unknown[] = [];
    const viaAvro: unknown[] = [];
    for (const [i, x] of xs.entries()) {
      viaJson.push(await a.process(rec(topics.decisions, json(x.d))), await a.process(rec(topics.verdicts, json(x.v))));
      viaAvro.push(await b.process(rec(topics.decisions, i % 2 ? dc.encode(x.d) : json(x.d))), await b.process(rec(topics.verdicts, vc.encode(x.v))));
    }
    expect(viaAvro).toEqual(viaJson);
    expect(viaJson.flat().length).toBeGreaterThan(8); // verdicts and the halted decisions moved debt
    expect(await td().process(rec(topics.verdicts, verdictCodec(77).encode(xs[0].v))).catch((e: unknown) => e)).toMatchObject({ code: 'STEWARD_OUTPUT_AVRO', message: 'unknown Avro schema id 77' });
  });

  it("the scorer join's decision check reads an Avro decision as its JSON", async () => {
    const [x] = outputs(1);
    const dec = new OutputDecoder(registry());
    const m = rec(topics.decisions, dc.encode(x.d));
    expect(parseDecision(m, await dec.decode('decision', m.value!))).toEqual(parseDecision(rec(topics.decisions, json(x.d))));
  });
});

describe('writers: the selected topic in Avro, the reply in JSON', () => {
  const route = { [REPLY_HEADERS.topic]: Buffer.from(topics.replies), [REPLY_HEADERS.partition]: Buffer.from('1'), [REPLY_HEADERS.correlation]: Buffer.from('inst:7') };

  it('tripwire stage: acgp.decisions in Avro under the start-up schema id; the waiting client still gets JSON', async () => {
    const p = new TripwireProcessor({
      engine: { decide: async () => blockedRecord() },
      decoder: new TraceDecoder({ maxBytes: 1_000_000 }),
      topics,
      metrics: new StewardMetrics(),
      replies: { topic: topics.replies, partitions: 4 },
      maxEventTimeSkewMs: null,
      nowMs: () => 42,
      encodeDecision: (d) => dc.encode(d),
    });
    const outs = await p.process({ ...rec(topics.traces, json(shellTrace)), headers: route });
    const value = outs.find((o) => o.topic === topics.decisions)!.message.value as Buffer;
    expect([value[0], value.readInt32BE(1)]).toEqual([0, DID]);
    const reply = JSON.parse(String(outs.find((o) => o.topic === topics.replies)!.message.value)) as DecisionMessage;
    expect(reply.trace_id).toBe('t-1');
    expect(await new OutputDecoder(registry()).decode('decision', value)).toEqual(reply);
  });

  it('scorer: acgp.verdicts in Avro; the reply in JSON', async () => {
    const [x] = outputs(1);
    const d = { engine: { score: async () => scoreRecord() }, topics, metrics: new StewardMetrics(), nowMs: () => 9, encodeVerdict: (v: VerdictMessage) => vc.encode(v) };
    const outs = await scoreOne(d, 'scorer', rec(topics.scoring, json({})), shellTrace, x.d, decisionInputOf(x.d), 1, { topic: topics.replies, partition: 1, correlation_id: 'c' });
    const value = outs.find((o) => o.topic === topics.verdicts)!.message.value as Buffer;
    expect(value.readInt32BE(1)).toBe(VID);
    const replied = JSON.parse(String(outs.find((o) => o.topic === topics.replies)!.message.value)) as VerdictMessage;
    expect(replied.trace_id).toBe('t-0');
    expect(await new OutputDecoder(registry()).decode('verdict', value)).toEqual(replied);
  });
});
