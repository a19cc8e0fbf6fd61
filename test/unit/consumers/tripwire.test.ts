import { describe, expect, it } from 'vitest';
import { TripwireProcessor } from '../../../src/consumers/tripwire.js';
import { TraceDecoder } from '../../../src/adapters/kafka/serde.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { REPLY_HEADERS } from '../../../src/adapters/kafka/request-reply.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { StewardError } from '../../../src/errors.js';
import { messageBytes } from '../../../src/consumers/stage-runner.js';
import { blockedRecord, shellTrace } from './fixtures.js';
import type { IngestMarks, IngestRecord } from '../../../src/adapters/redis/ingest-marks.js';
import { INGEST_KEY_HEADER } from '../../../src/adapters/kafka/headers.js';

const topics = topicNames('p');
const route = { [REPLY_HEADERS.topic]: Buffer.from(topics.replies), [REPLY_HEADERS.partition]: Buffer.from('1'), [REPLY_HEADERS.correlation]: Buffer.from('inst:7') };

function proc(maxMessageBytes: number, calls: { n: number } = { n: 0 }) {
  return new TripwireProcessor({
    engine: {
      decide: async () => {
        calls.n++;
        return blockedRecord({ intervention: 'ok', rules: [], reasons: [] });
      },
    },
    decoder: new TraceDecoder({ maxBytes: 2_000_000 }),
    topics,
    metrics: new StewardMetrics(),
    replies: { topic: topics.replies, partitions: 4 },
    maxEventTimeSkewMs: null,
    maxMessageBytes,
    nowMs: () => 42,
  });
}

const msg = (value: string | Buffer, headers: Record<string, Buffer> = {}): InMessage => ({
  topic: topics.traces,
  partition: 0,
  offset: '5',
  key: Buffer.from('a1'),
  value: Buffer.isBuffer(value) ? value : Buffer.from(value),
  headers,
  timestampMs: 1767225600000,
});

const padded = (bytes: number) => {
  const base = JSON.stringify({ ...shellTrace, content: '' });
  return JSON.stringify({ ...shellTrace, content: 'x'.repeat(bytes - base.length) });
};

describe('tripwire stage output limit', () => {
  it('a trace whose scoring message would exceed max_message_bytes is refused (STEWARD_TRACE_TOO_LARGE, not retryable) after deciding', async () => {
    const value = padded(99_900); // the trace fits, the trace + its decision record does not
    expect(value.length).toBe(99_900);
    const err = await proc(100_000).process(msg(value)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StewardError);
    expect((err as StewardError).code).toBe('STEWARD_TRACE_TOO_LARGE');
    expect((err as StewardError).retryable).toBe(false);
    expect((err as StewardError).message).toMatch(/p\.scoring message would be \d+ bytes, over limits\.max_message_bytes 100000/);
  });

  it('a trace that alone exceeds the limit is refused before the engine sees it', async () => {
    const calls = { n: 0 };
    const err = await proc(100_000, calls).process(msg(padded(100_001))).catch((e: unknown) => e);
    expect((err as StewardError).code).toBe('STEWARD_TRACE_TOO_LARGE');
    expect(calls.n).toBe(0);
  });

  it('outputs within the limit pass, each one checked with key and headers', async () => {
    const outs = await proc(100_000).process(msg(padded(90_000), route));
    expect(outs.map((o) => o.topic)).toEqual([topics.replies, topics.decisions, topics.scoring]);
    expect(outs.every((o) => messageBytes(o.message) <= 100_000)).toBe(true);
  });
});

describe('tripwire stage: dead-lettered inputs answer their waiting client', () => {
  it('with a valid reply route: a fail-closed block with the error code, on the client partition and correlation id', () => {
    const m = msg(JSON.stringify({ ...shellTrace, timestamp: 'not-a-time' }), route);
    const outs = proc(100_000).onDeadLetter(m, { code: 'STEWARD_TRACE_SCHEMA', message: '/timestamp: must match format "date-time"' });
    expect(outs).toHaveLength(1);
    const [o] = outs;
    expect(o.topic).toBe(topics.replies);
    expect(o.message.partition).toBe(1);
    expect(o.message.headers).toEqual({ [REPLY_HEADERS.correlation]: 'inst:7', [REPLY_HEADERS.kind]: 'decision' });
    const d = JSON.parse(String(o.message.value));
    expect(d).toMatchObject({
      trace_id: 't-1',
      agent_id: 'a1',
      intervention: 'block',
      approved: false,
      stage: 'none',
      halted: false,
      hook: 'tool_call',
      tool: 'shell',
      rejected: { code: 'STEWARD_TRACE_SCHEMA', message: '/timestamp: must match format "date-time"' },
      decided_at_ms: 42,
    });
    expect(d.fallback).toBeUndefined();
    expect(d.reasons[0]).toContain('STEWARD_TRACE_SCHEMA');
  });

  it('unreadable values still get an answer; long messages are cut', () => {
    const outs = proc(100_000).onDeadLetter(msg(Buffer.from([0, 1, 2]), route), { code: 'STEWARD_TRACE_AVRO', message: 'm'.repeat(5000) });
    const d = JSON.parse(String(outs[0].message.value));
    expect(d).toMatchObject({ trace_id: '', agent_id: 'a1', intervention: 'block', rejected: { code: 'STEWARD_TRACE_AVRO' } });
    expect(d.rejected.message.length).toBeLessThan(1100);
  });

  it('no reply without a route, or with a route outside the replies topic', () => {
    const p = proc(100_000);
    expect(p.onDeadLetter(msg('{', {}), { code: 'STEWARD_TRACE_JSON', message: 'x' })).toEqual([]);
    expect(p.onDeadLetter(msg('{', { ...route, [REPLY_HEADERS.topic]: Buffer.from(topics.reviews) }), { code: 'STEWARD_TRACE_JSON', message: 'x' })).toEqual([]);
    expect(p.onDeadLetter(msg('{', { ...route, [REPLY_HEADERS.partition]: Buffer.from('4') }), { code: 'STEWARD_TRACE_JSON', message: 'x' })).toEqual([]);
  });
});

describe('tripwire stage: approval requests', () => {
  it('the deadline counts from the broker time of the trace record, not from the timestamp the agent wrote (review finding 4)', async () => {
    const broker = 1_767_225_600_000;
    // The agent stamped its trace 5 minutes in the past (inside the ±skew clamp): the engine's request starts there.
    const stamped = broker - 300_000;
    const approval = {
      approval_id: 'ap-000000000000000000000001', tool: 'shell', agent_id: 'a1', tenant: 'acme', agent_tier: 'ACL-2', trace_id: 't-1', event_id: 'e', job_id: null,
      skill_id: null, role: 'supervisor', default_action: 'approve' as const, requested_ms: stamped, deadline_ms: stamped + 120_000, args: null,
    };
    const p = new TripwireProcessor({
      engine: { decide: async () => blockedRecord({ intervention: 'escalate', rules: [], reasons: [], approval }) },
      decoder: new TraceDecoder({ maxBytes: 2_000_000 }),
      topics,
      metrics: new StewardMetrics(),
      replies: { topic: topics.replies, partitions: 4 },
      maxEventTimeSkewMs: 300_000,
      maxMessageBytes: 1_000_000,
      nowMs: () => broker,
    });
    const outs = await p.process(msg(JSON.stringify({ ...shellTrace, timestamp: new Date(stamped).toISOString() })));
    const req = JSON.parse(String(outs.find((o) => o.topic === topics.approvals)!.message.value)) as { requested_ms: number; deadline_ms: number };
    expect(req).toMatchObject({ requested_ms: broker, deadline_ms: broker + 120_000 });
    const decision = JSON.parse(String(outs.find((o) => o.topic === topics.decisions)!.message.value)) as { approval_deadline_ms: number; event_time_ms: number };
    expect(decision.approval_deadline_ms).toBe(broker + 120_000);
    expect(decision.event_time_ms).toBe(stamped);
  });
});

describe("tripwire stage ingest marks (http.idempotency.dedupe 'pipeline', D52)", () => {
  const keyed = (offset: string, key: string | undefined, agent: string | null = 'a1'): InMessage => ({
    ...msg(JSON.stringify(shellTrace), key === undefined ? {} : { [INGEST_KEY_HEADER]: Buffer.from(key) }),
    offset,
    key: agent === null ? null : Buffer.from(agent),
  });
  const withMarks = (marks: IngestMarks, unavailable: unknown[] = [], ingestKeyAgent?: (a: string) => boolean) => {
    const metrics = new StewardMetrics();
    const p = new TripwireProcessor({ engine: { decide: async () => blockedRecord({ intervention: 'ok', rules: [], reasons: [] }) }, decoder: new TraceDecoder({ maxBytes: 100_000 }), topics, metrics, replies: { topic: topics.replies, partitions: 4 }, maxEventTimeSkewMs: null, ingestMarks: marks, ingestKeyAgent, onMarksUnavailable: (e) => void unavailable.push(e) });
    return { p, metrics };
  };

  it('asks for the records with a key and an agent only; copies are done with no output, the rest left to process()', async () => {
    const asked: IngestRecord[][] = [];
    const { p, metrics } = withMarks({ firsts: async (rs) => (asked.push([...rs]), rs.map((r) => r.key !== 'dup')) });
    const out = await p.processChunk!([keyed('1', 'k1'), keyed('2', undefined), keyed('3', 'dup'), keyed('4', ''), keyed('5', 'dup', null)]);
    expect(out).toEqual([undefined, undefined, [], undefined, undefined]);
    expect(asked).toEqual([[
      { agentId: 'a1', key: 'k1', topic: topics.traces, partition: 0, offset: '1' },
      { agentId: 'a1', key: 'dup', topic: topics.traces, partition: 0, offset: '3' },
    ]]);
    expect((await metrics.duplicates.get()).values).toEqual([{ labels: { stage: 'tripwire' }, value: 1 }]);
    // A chunk without keys does not ask at all.
    await p.processChunk!([keyed('6', undefined)]);
    expect(asked).toHaveLength(1);
  });

  it("an agent whose records may not name keys (one that must sign) is not asked about: its record's key marks nothing", async () => {
    const asked: IngestRecord[][] = [];
    const { p } = withMarks({ firsts: async (rs) => (asked.push([...rs]), rs.map(() => false)) }, [], (a) => a !== 'signer');
    expect(await p.processChunk!([keyed('1', 'k1', 'signer'), keyed('2', 'k1')])).toEqual([undefined, []]);
    expect(asked.map((rs) => rs.map((r) => r.agentId))).toEqual([['a1']]);
  });

  it('marks that cannot be asked leave the whole chunk to process() (fail open, told once per chunk)', async () => {
    const unavailable: unknown[] = [];
    const { p } = withMarks({ firsts: async () => Promise.reject(new StewardError('STEWARD_STATE_UNAVAILABLE', 'redis ingest marks: down', { retryable: true })) }, unavailable);
    expect(await p.processChunk!([keyed('1', 'k1'), keyed('2', 'k1')])).toEqual([undefined, undefined]);
    expect(unavailable).toHaveLength(1);
  });

  it('without marks the stage takes no chunks (every input goes through process())', () => {
    expect(proc(100_000).processChunk).toBeUndefined();
  });
});
