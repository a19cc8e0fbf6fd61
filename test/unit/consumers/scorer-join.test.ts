import { describe, expect, it } from 'vitest';
import { JoinedScorerProcessor } from '../../../src/consumers/scorer-join.js';
import { TripwireProcessor } from '../../../src/consumers/tripwire.js';
import { TraceDecoder } from '../../../src/adapters/kafka/serde.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { REPLY_HEADERS } from '../../../src/adapters/kafka/request-reply.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { decisionMessage } from '../../../src/contracts/engine-records.js';
import { TRACE_POSITION_HEADERS, tracePosition } from '../../../src/adapters/kafka/trace-position.js';
import { traceEventId } from '../../../src/engine/event-id.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import type { ScoredMarks } from '../../../src/adapters/redis/scored-marks.js';
import type { Trace } from '../../../src/engine/types.js';
import { blockedRecord, scoreRecord, shellTrace } from './fixtures.js';

const topics = topicNames('acgp');
const replies = { topic: topics.replies, partitions: 4 };
const route = { [REPLY_HEADERS.topic]: Buffer.from(topics.replies), [REPLY_HEADERS.partition]: Buffer.from('2'), [REPLY_HEADERS.correlation]: Buffer.from('inst:9') };

const traceRecord = (trace: Trace, headers: Record<string, Buffer> = {}): InMessage => ({
  topic: topics.traces,
  partition: 1,
  offset: '40',
  key: Buffer.from(trace.agent_id),
  value: Buffer.from(JSON.stringify(trace)),
  headers,
  timestampMs: 1767225600000,
});

/** The decision record the tripwire stage writes for `traceRec` (with its position headers unless `position` is false). */
function decisionRecord(traceRec: InMessage, over: { halted?: boolean; position?: boolean; traceId?: string; eventId?: string } = {}): InMessage {
  const trace = JSON.parse(traceRec.value!.toString()) as Trace;
  const rec = { ...blockedRecord({ intervention: 'flag', halted: over.halted ?? false }), eventId: over.eventId ?? traceEventId(trace.trace_id, traceRec.value) };
  const d = decisionMessage(rec, { ...trace, trace_id: over.traceId ?? trace.trace_id }, 1767225600000, 1767225600001);
  return {
    topic: topics.decisions,
    partition: 1,
    offset: '77',
    key: Buffer.from(trace.agent_id),
    value: Buffer.from(JSON.stringify(d)),
    headers: over.position === false ? {} : { [TRACE_POSITION_HEADERS.partition]: Buffer.from('1'), [TRACE_POSITION_HEADERS.offset]: Buffer.from(traceRec.offset) },
    timestampMs: 1767225600002,
  };
}

function scorer(traces: Map<string, InMessage>) {
  const reads: string[] = [];
  const marked: unknown[] = [];
  const scored: { trace: Trace; eventTimeMs: number }[] = [];
  const unpositioned: InMessage[] = [];
  const marks: ScoredMarks = {
    turn: async (eventId, r, correlationId) => {
      marked.push({ eventId, topic: r.topic, offset: r.offset, correlationId });
      return 'first';
    },
  };
  const proc = new JoinedScorerProcessor({
    engine: { score: async (trace, _d, ev) => (scored.push({ trace, eventTimeMs: ev }), scoreRecord({ intervention: 'flag', stage: 'ctq', ctq: 0.7 })) },
    topics,
    metrics: new StewardMetrics(),
    marks,
    decoder: new TraceDecoder({ maxBytes: 100_000 }),
    traces: {
      get: async (p, o) => {
        reads.push(`${p}@${o}`);
        return traces.get(`${p}@${o}`);
      },
    },
    replies,
    maxEventTimeSkewMs: 60_000,
    onUnpositioned: (m) => unpositioned.push(m),
  });
  return { proc, reads, marked, scored, unpositioned };
}

describe('scorer join (consumer.scorer_input: join)', () => {
  it('reads the trace the decision names; reply route, event id and event time come from the trace record', async () => {
    const tr = traceRecord({ ...shellTrace, timestamp: '2026-01-01T01:00:00Z' }, route);
    const s = scorer(new Map([['1@40', tr]]));
    const outs = await s.proc.process(decisionRecord(tr));
    expect(s.reads).toEqual(['1@40']);
    expect(outs.map((o) => [o.topic, o.message.partition])).toEqual([[topics.verdicts, undefined], [topics.replies, 2]]);
    const verdict = JSON.parse(String(outs[0].message.value));
    expect(verdict).toMatchObject({ trace_id: 't-1', agent_id: 'a1', event_id: traceEventId('t-1', tr.value) });
    expect(s.marked).toEqual([{ eventId: traceEventId('t-1', tr.value), topic: topics.decisions, offset: '77', correlationId: 'inst:9' }]);
    // Clamped to the record's broker time (1 h ahead, skew 1 min).
    expect(s.scored[0].eventTimeMs).toBe(1767225600000 + 60_000);
  });

  it('a reply route outside the replies topic is ignored: the verdict still goes to acgp.verdicts', async () => {
    const tr = traceRecord(shellTrace, { ...route, [REPLY_HEADERS.topic]: Buffer.from(topics.reviews) });
    const outs = await scorer(new Map([['1@40', tr]])).proc.process(decisionRecord(tr));
    expect(outs.map((o) => o.topic)).toEqual([topics.verdicts]);
  });

  it('halted decisions are not scored and their trace is not read', async () => {
    const tr = traceRecord(shellTrace);
    const s = scorer(new Map([['1@40', tr]]));
    expect(await s.proc.process(decisionRecord(tr, { halted: true }))).toEqual([]);
    expect(s.reads).toEqual([]);
  });

  it('a decision without position headers (written before the join) is passed over and reported', async () => {
    const tr = traceRecord(shellTrace);
    const s = scorer(new Map([['1@40', tr]]));
    expect(await s.proc.process(decisionRecord(tr, { position: false }))).toEqual([]);
    expect(s.unpositioned).toHaveLength(1);
    expect(s.scored).toEqual([]);
  });

  it('a decision naming another trace, other bytes or a missing record is dead-lettered', async () => {
    const tr = traceRecord(shellTrace);
    const s = scorer(new Map([['1@40', tr]]));
    await expect(s.proc.process(decisionRecord(tr, { traceId: 't-2' }))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA', retryable: false });
    await expect(s.proc.process(decisionRecord(tr, { eventId: 't-1#00' }))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
    await expect(scorer(new Map()).proc.process(decisionRecord(tr))).rejects.toThrow(/not in the topic/);
    expect(s.scored).toEqual([]);
  });

  it('malformed position headers count as none; a decision with an unknown intervention is dead-lettered', async () => {
    const tr = traceRecord(shellTrace);
    const s = scorer(new Map([['1@40', tr]]));
    const d = decisionRecord(tr);
    expect(await s.proc.process({ ...d, headers: { ...d.headers, [TRACE_POSITION_HEADERS.offset]: Buffer.from('-1') } })).toEqual([]);
    expect(await s.proc.process({ ...d, headers: { ...d.headers, [TRACE_POSITION_HEADERS.partition]: Buffer.from('x') } })).toEqual([]);
    expect(s.unpositioned).toHaveLength(2);
    const bad = { ...JSON.parse(d.value!.toString()), intervention: 'allow' };
    await expect(s.proc.process({ ...d, value: Buffer.from(JSON.stringify(bad)) })).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
    expect(s.reads).toEqual([]);
  });

  it('a trace the schema refuses is dead-lettered, not scored', async () => {
    const bad = { ...traceRecord(shellTrace), value: Buffer.from(JSON.stringify({ trace_id: 't-1', agent_id: 'a1' })) };
    const s = scorer(new Map([['1@40', bad]]));
    await expect(s.proc.process(decisionRecord(traceRecord(shellTrace)))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
  });
});

describe('tripwire stage with scorer_input: join', () => {
  const tripwire = (scorerInput: 'scoring' | 'join') =>
    new TripwireProcessor({
      engine: { decide: async () => blockedRecord({ intervention: 'ok', rules: [], reasons: [], halted: false }) },
      decoder: new TraceDecoder({ maxBytes: 100_000 }),
      topics,
      metrics: new StewardMetrics(),
      replies,
      maxEventTimeSkewMs: null,
      scorerInput,
    });

  it('writes the decision only, naming the trace position; scoring mode adds the scoring record', async () => {
    const tr = traceRecord(shellTrace);
    const join = await tripwire('join').process(tr);
    expect(join.map((o) => o.topic)).toEqual([topics.decisions]);
    expect(tracePosition({ ...tr, headers: Object.fromEntries(Object.entries(join[0].message.headers ?? {}).map(([k, v]) => [k, Buffer.from(String(v))])) })).toEqual({ partition: 1, offset: '40' });
    expect((await tripwire('scoring').process(tr)).map((o) => o.topic)).toEqual([topics.decisions, topics.scoring]);
  });
});
