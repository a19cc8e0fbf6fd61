// acgp.trust-debt in Avro (topics.avro_outputs: trust_debt, docs/pipeline.md "Serde"): the trust-debt stage writes
// schemas/avro/trust-debt-event.avsc when selected, and every reader (the sink, the demo summary, the test
// collector) takes JSON and Avro records on the same topic; the sink stores the same rows either way.
import { describe, expect, it } from 'vitest';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { readAvroSchema } from '../../../src/adapters/kafka/serde.js';
import { OutputDecoder } from '../../../src/adapters/kafka/output-decoder.js';
import { trustDebtCodec } from '../../../src/adapters/kafka/output-avro.js';
import type { ClickHouseSink, SinkItem } from '../../../src/adapters/clickhouse/sink.js';
import type { LedgerWriter } from '../../../src/adapters/clickhouse/ledger-store.js';
import { SinkProcessor } from '../../../src/consumers/sink-processor.js';
import { TrustDebtProcessor } from '../../../src/consumers/trust-debt.js';
import { decisionMessage } from '../../../src/contracts/engine-records.js';
import type { DecisionMessage, TrustDebtMessage } from '../../../src/contracts/messages.js';
import { DEFAULT_TRUST_DEBT_CONFIG, MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { StewardError } from '../../../src/errors.js';
import { blockedRecord, shellTrace } from './fixtures.js';
import { stubRegistry } from '../../support/stub-registry.js';

const topics = topicNames('t');
const TID = 31;
const registry = (state: { down?: boolean; lookups?: number } = {}) => stubRegistry({ [TID]: readAvroSchema('trust-debt-event'), 5: readAvroSchema('decision') }, state);
const tc = trustDebtCodec(TID);

let offset = 0;
const rec = (topic: string, value: Buffer | string, timestampMs = Date.now()): InMessage => ({ topic, partition: 0, offset: String(offset++), key: Buffer.from('a1'), value: Buffer.from(value), headers: {}, timestampMs });
const json = (o: object) => Buffer.from(JSON.stringify(o));

/** Halted block decisions of agent a1, 10 minutes apart (enough to cross the debt thresholds), critical every third. */
function halted(n: number, atMs = (i: number) => 1767225600000 + i * 600_000): DecisionMessage[] {
  return Array.from({ length: n }, (_, i) => {
    const trace = { ...shellTrace, trace_id: `t-${i}` };
    return decisionMessage(blockedRecord({ traceId: trace.trace_id, halted: true, eventId: `t-${i}#e`, severity: i % 3 === 0 ? 'critical' : 'high' }), trace, atMs(i), atMs(i) + 5, '0.1.0');
  });
}

const stage = (encode?: (t: TrustDebtMessage) => Buffer) =>
  new TrustDebtProcessor({ store: new MemoryTrustDebtStore(), configFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), outputs: new OutputDecoder(registry()), encodeTrustDebt: encode });

/** The trust-debt stage's output values for `ds`, in order. */
async function run(ds: DecisionMessage[], encode?: (t: TrustDebtMessage) => Buffer): Promise<(string | Buffer)[]> {
  const p = stage(encode);
  const out: (string | Buffer)[] = [];
  for (const d of ds) for (const o of await p.process(rec(topics.decisions, json(d)))) out.push(o.message.value as string | Buffer);
  return out;
}

describe('trust-debt events in Avro (schemas/avro/trust-debt-event.avsc)', () => {
  it('read back as the JSON text itself (same keys, same order), with and without trace_id, crossings included', () => {
    const t: TrustDebtMessage = { event_id: 'e1', trace_id: 't-1', tenant: 'acme', agent_id: 'a1', at_ms: 1767225600000, cause: 'intervention:block', before: 0.25, after: 1 / 3, level: 'elevated_monitoring', previous_level: 'normal', crossings: [{ threshold: 'elevated_monitoring', direction: 'up' }], duplicate: false };
    const b = tc.encode(t);
    expect([b[0], b.readInt32BE(1)]).toEqual([0, TID]);
    expect(JSON.stringify(tc.decode(b))).toBe(JSON.stringify(t));
    const audit = { ...t, trace_id: undefined, cause: 'good_behavior_audit', crossings: [], duplicate: true };
    expect(JSON.stringify(tc.decode(tc.encode(audit)))).toBe(JSON.stringify(audit));
    expect(b.length).toBeLessThan(JSON.stringify(t).length);
  });

  it('the trust-debt stage writes Avro under the start-up id when selected; decoded, the records are its JSON records', async () => {
    const ds = halted(12);
    const viaJson = await run(ds);
    const viaAvro = await run(ds, (t) => tc.encode(t));
    expect(viaJson.length).toBe(ds.length);
    const parsed = viaJson.map((v) => JSON.parse(String(v)) as TrustDebtMessage);
    expect(parsed.some((t) => t.crossings.length > 0)).toBe(true); // the mix crosses thresholds
    expect(parsed.every((t) => typeof t.trace_id === 'string')).toBe(true);
    for (const v of viaAvro) expect([(v as Buffer)[0], (v as Buffer).readInt32BE(1)]).toEqual([0, TID]);
    const dec = new OutputDecoder(registry());
    expect((await Promise.all(viaAvro.map((v) => dec.decode('trustDebt', v as Buffer)))).map((t) => JSON.stringify(t))).toEqual(viaJson);
  });

  it('a change whose at_ms is not a whole number (a long in the schema) goes out as JSON, unchanged, not dead-lettered', async () => {
    const ds = halted(2, (i) => 1767225600000.5 + i);
    const guarded = (t: TrustDebtMessage) => {
      try {
        return tc.encode(t);
      } catch (e) {
        throw new StewardError('STEWARD_OUTPUT_AVRO', (e as Error).message);
      }
    };
    expect(await run(ds, guarded)).toEqual(await run(ds));
  });
});

/** A sink that keeps the rows it is handed per table. */
function sinkProc(outputs: OutputDecoder) {
  const rows: Record<string, unknown[]> = {};
  const sink = {
    encodesLines: false,
    withRetry: (_: string, fn: () => Promise<unknown>) => fn(),
    expedites: () => false,
    write: async (table: string, items: SinkItem[]) => void (rows[table] ??= []).push(...items.map((i) => i.row)),
  } as unknown as ClickHouseSink;
  const dead: { offset: string; code: string; message: string }[] = [];
  const proc = new SinkProcessor(topics, sink, {} as LedgerWriter, async (m, e) => void dead.push({ offset: m.offset, code: e.code, message: e.message }), async () => undefined, () => 7, undefined, undefined, undefined, outputs);
  return { proc, rows, dead };
}

describe('sink: acgp.trust-debt in JSON and Avro', () => {
  it('a topic switched from JSON to Avro mid-stream stores the same trust_debt_events rows as the all-JSON one', async () => {
    const values = (await run(halted(10))).map((v) => JSON.parse(String(v)) as TrustDebtMessage);
    const allJson = sinkProc(new OutputDecoder(registry()));
    await allJson.proc.process(values.map((t) => rec(topics.trustDebt, json(t))));
    const state = { lookups: 0 };
    const mixed = sinkProc(new OutputDecoder(registry(state)));
    await mixed.proc.process(values.map((t, i) => rec(topics.trustDebt, i < 4 ? json(t) : tc.encode(t))));
    expect(state.lookups).toBe(1);
    expect(mixed.dead).toEqual([]);
    expect(allJson.rows.trust_debt_events).toHaveLength(10);
    expect(mixed.rows.trust_debt_events).toEqual(allJson.rows.trust_debt_events);
  });

  it('dead-letters an unknown id or a schema that is not a trust-debt event; a registry outage fails the batch, retryable', async () => {
    const [t] = (await run(halted(1))).map((v) => JSON.parse(String(v)) as TrustDebtMessage);
    const s = sinkProc(new OutputDecoder(registry()));
    const unknown = rec(topics.trustDebt, trustDebtCodec(404).encode(t));
    const decisionId = rec(topics.trustDebt, trustDebtCodec(5).encode(t));
    await s.proc.process([unknown, decisionId, rec(topics.trustDebt, tc.encode(t))]);
    expect(s.dead).toEqual([
      { offset: unknown.offset, code: 'STEWARD_OUTPUT_AVRO', message: 'unknown Avro schema id 404' },
      { offset: decisionId.offset, code: 'STEWARD_OUTPUT_AVRO', message: expect.stringMatching(/schema id 5 is not a trust-debt-event schema/) },
    ]);
    expect(s.rows.trust_debt_events).toHaveLength(1);
    const down = sinkProc(new OutputDecoder(registry({ down: true })));
    expect(await down.proc.process([rec(topics.trustDebt, tc.encode(t))]).catch((e: unknown) => e)).toMatchObject({ code: 'STEWARD_KAFKA', retryable: true });
  });
});
