import { describe, it, expect } from 'vitest';
import { TraceDecoder, avroRecordToTrace, traceToAvroRecord, isConfluentWire, registerAvro } from '../../../../src/adapters/kafka/serde.js';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { dlqMessage, readDlqHeaders, replayOf } from '../../../../src/adapters/kafka/dlq.js';
import { replyRoute, replyHeaders } from '../../../../src/adapters/kafka/request-reply.js';
import { topicNames, topicSpecs } from '../../../../src/adapters/kafka/topics.js';
import { putHeader, type InMessage } from '../../../../src/adapters/kafka/client.js';
import { messageBytes } from '../../../../src/consumers/stage-runner.js';
import type { Trace } from '../../../../src/engine/types.js';

const t: Trace = { trace_id: 't1', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'x', args: { n: 1, nested: { y: [1, 2] } }, sources: [{ id: 's', trust: 0.4 }], custom: { k: true }, response_size: 12 };

async function code(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
}

describe('trace serde', () => {
  const dec = new TraceDecoder({ maxBytes: 1000 });
  it('decodes valid JSON and classifies failures', async () => {
    expect((await dec.decode(Buffer.from(JSON.stringify(t)))).trace).toEqual(t);
    expect(await code(dec.decode(Buffer.from('{bad')))).toBe('STEWARD_TRACE_JSON');
    expect(await code(dec.decode(null))).toBe('STEWARD_TRACE_JSON');
    expect(await code(dec.decode(Buffer.from(JSON.stringify({ trace_id: 'x', agent_id: 'a', hook: 'h' }))))).toBe('STEWARD_TRACE_SCHEMA');
    expect(await code(dec.decode(Buffer.from(JSON.stringify({ ...t, args: 'not-an-object' }))))).toBe('STEWARD_TRACE_SCHEMA');
    expect(await code(dec.decode(Buffer.alloc(1001, 32)))).toBe('STEWARD_TRACE_TOO_LARGE');
    // Wire format without a registry is dead-lettered, not retried.
    expect(await code(dec.decode(Buffer.from([0, 0, 0, 0, 1, 2])))).toBe('STEWARD_TRACE_AVRO');
  });

  it("returns the trace's timestamp as epoch ms, parsed once while validating, in every accepted form", async () => {
    const d = new TraceDecoder({ maxBytes: 10_000 });
    const at = async (timestamp: string) => (await d.decode(Buffer.from(JSON.stringify({ ...t, timestamp })))).timestampMs;
    expect(await at('2026-01-01T00:00:00Z')).toBe(Date.UTC(2026, 0, 1));
    expect(await at('2026-01-01T01:30:00.250+01:30')).toBe(Date.UTC(2026, 0, 1, 0, 0, 0, 250));
    expect(await at('2026-03-04 05:06')).toBe(Date.UTC(2026, 2, 4, 5, 6)); // the regex path (no seconds), no offset = UTC
    expect(await at('2026-03-04')).toBe(Date.UTC(2026, 2, 4));
    // A decode after another: the number belongs to this trace, not to the previous one.
    expect(await at('2026-01-02T00:00:00Z')).toBe(Date.UTC(2026, 0, 2));
    // Unreadable times stay a schema error with the same message.
    await expect(d.decode(Buffer.from(JSON.stringify({ ...t, timestamp: '2026-02-30T00:00:00Z' })))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA', message: 'trace invalid at /timestamp: must match format "date-time"' });
  });

  it('registry errors: its own "no such schema" answer is dead-lettered; outages, 5xx whatever their text, and bare 404s are retried', async () => {
    const responseError = (status: number, message: string) => Object.assign(new Error(message), { name: 'ResponseError', status });
    const cases: [unknown, string, boolean][] = [
      [responseError(404, 'steward - Schema 7 not found'), 'STEWARD_TRACE_AVRO', false],
      [responseError(404, "steward - No content with id 'contentId-7' was found."), 'STEWARD_TRACE_AVRO', false],
      [responseError(422, 'steward - Unprocessable'), 'STEWARD_TRACE_AVRO', false],
      [responseError(503, 'steward - upstream not found'), 'STEWARD_KAFKA', true],
      [responseError(500, 'steward - Error, status 500'), 'STEWARD_KAFKA', true],
      [responseError(429, 'steward - slow down'), 'STEWARD_KAFKA', true],
      [responseError(404, 'steward - Error, status 404: <html>'), 'STEWARD_KAFKA', true], // not the registry answering
      [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), 'STEWARD_KAFKA', true],
      [new Error('invalid union index: 9'), 'STEWARD_TRACE_AVRO', false], // a decode failure of the bytes themselves
    ];
    for (const [err, wantCode, wantRetry] of cases) {
      const d = new TraceDecoder({ maxBytes: 1000, registry: { decode: async () => Promise.reject(err) } as never });
      const got = (await d.decode(Buffer.from([0, 0, 0, 0, 7, 2, 4])).catch((e: unknown) => e)) as { code: string; retryable: boolean };
      expect([got.code, got.retryable], (err as Error).message).toEqual([wantCode, wantRetry]);
    }
  });

  it('rejects ids with a lone UTF-16 surrogate (no UTF-8 form: every key built from one would fail), keeps paired ones', async () => {
    // JSON text escapes: JSON.parse turns "\ud800" into a lone surrogate.
    // tool and hook: copied into the decision, whose Avro form would read back with U+FFFD (contracts C13).
    for (const [field, raw] of [['agent_id', 'a\\ud800'], ['trace_id', '\\udc00x'], ['session_id', 'x\\udbff'], ['task_id', 'y\\udfff\\ud800'], ['tool', 'rm\\ud800'], ['hook', 'tool_call\\udc00']]) {
      const text = JSON.stringify({ ...t, [field]: 'PLACEHOLDER' }).replace('PLACEHOLDER', raw);
      const err = (await dec.decode(Buffer.from(text)).catch((e: unknown) => e)) as { code: string; message: string };
      expect(err.code, field).toBe('STEWARD_TRACE_SCHEMA');
      expect(err.message).toBe(`trace invalid at /${field}: contains a lone UTF-16 surrogate`);
    }
    const paired = JSON.stringify({ ...t, agent_id: 'PLACEHOLDER' }).replace('PLACEHOLDER', 'agent-\\ud83d\\ude00');
    expect((await dec.decode(Buffer.from(paired))).trace.agent_id).toBe('agent-\u{1F600}');
  });

  it('accepts ISO-8601 timestamps beyond RFC 3339 (no offset, microseconds, no seconds) and rejects impossible dates', async () => {
    for (const timestamp of ['2026-01-01T00:00:00', '2026-01-01T00:00:00.123456', '2026-01-01 00:00', '2026-01-01T01:00+01'])
      expect((await dec.decode(Buffer.from(JSON.stringify({ ...t, timestamp })))).trace.timestamp).toBe(timestamp);
    for (const timestamp of ['2026-02-30T00:00:00Z', 'yesterday', '2026-01-01T00:00:00 UTC'])
      expect(await code(dec.decode(Buffer.from(JSON.stringify({ ...t, timestamp }))))).toBe('STEWARD_TRACE_SCHEMA');
  });
  it('round-trips a trace through the Avro record shape (free-form objects and extra fields as JSON text)', () => {
    const rec = traceToAvroRecord(t);
    expect(typeof rec.args).toBe('string');
    expect(JSON.parse(rec.extra as string)).toEqual({ custom: { k: true } });
    expect(rec.sources).toEqual([{ id: 's', category: null, trust: 0.4 }]);
    expect(avroRecordToTrace(rec)).toEqual(t);
    expect(isConfluentWire(Buffer.from('{"a":1}'))).toBe(false);
  });
});

describe('DLQ and reply routing', () => {
  const m: InMessage = { topic: 'p.traces', partition: 2, offset: '41', key: Buffer.from('a'), value: Buffer.from([1, 2, 3]), headers: { keep: Buffer.from('me') }, timestampMs: 5 };
  it('keeps the original bytes, key and headers and says why and where from', () => {
    const out = dlqMessage(m, { code: 'STEWARD_TRACE_JSON', message: 'bad' }, 'tripwire', 99);
    expect(out.value).toBe(m.value);
    expect(out.key).toBe(m.key);
    const back: InMessage = { ...m, headers: Object.fromEntries(Object.entries(out.headers!).map(([k, v]) => [k, Buffer.from(v as string)])) };
    expect(readDlqHeaders(back)).toEqual({ code: 'STEWARD_TRACE_JSON', message: 'bad', sourceTopic: 'p.traces', sourcePartition: 2, sourceOffset: '41', stage: 'tripwire' });
    expect(back.headers.keep.toString()).toBe('me');
  });
  it('replayOf: a tripwire-stage trace back to the traces topic, DLQ headers removed; everything else refused', () => {
    // An ingress record of http.idempotency.dedupe 'pipeline' (D52): its key is not replayed, or the stage would drop the replay as a copy.
    const twice: InMessage = { ...m, headers: { keep: Buffer.from('me'), tag: Buffer.from('b'), 'x-steward-idempotency-key': Buffer.from('B1_t1') }, repeatedHeaders: { tag: [Buffer.from('a'), Buffer.from('b')] } };
    const asRead = (o: ReturnType<typeof dlqMessage>, extra: Record<string, string> = {}): InMessage => {
      const headers: Record<string, Buffer> = {};
      const repeated: Record<string, Buffer[]> = {};
      for (const [k, v] of Object.entries({ ...o.headers, ...extra })) {
        if (Array.isArray(v)) {
          repeated[k] = v.map((x) => Buffer.from(x));
          headers[k] = repeated[k]![repeated[k]!.length - 1]!;
        } else headers[k] = Buffer.from(v);
      }
      return { topic: 'p.dlq', partition: 1, offset: '7', key: o.key as Buffer, value: o.value as Buffer, headers, repeatedHeaders: repeated, timestampMs: 5 };
    };
    const d = dlqMessage(twice, { code: 'STEWARD_EVAL', message: 'boom' }, 'tripwire', 99);
    const plan = replayOf(asRead(d), 'p.traces');
    expect(plan.ok).toBe(true);
    if (!plan.ok) return;
    expect(plan.topic).toBe('p.traces');
    expect(plan.message.value).toEqual(m.value);
    expect(plan.message.key).toEqual(m.key);
    expect(Object.keys(plan.message.headers!).sort()).toEqual(['keep', 'tag', 'x-steward-replayed-from']);
    expect((plan.message.headers!.tag as Buffer[]).map(String)).toEqual(['a', 'b']);
    expect(plan.message.headers!['x-steward-replayed-from']).toBe('p.dlq/1/7');
    // another deployment's traces, other stages' records, a cut record, not a DLQ record at all
    expect(replayOf(asRead(d), 'q.traces')).toMatchObject({ ok: false, reason: expect.stringContaining('source p.traces') });
    for (const stage of ['scorer', 'trust-debt', 'sink']) {
      expect(replayOf(asRead(dlqMessage({ ...m, topic: 'p.verdicts' }, { code: 'X', message: 'y' }, stage, 1)), 'p.traces')).toMatchObject({ ok: false, reason: expect.stringContaining(`stage ${stage}`) });
    }
    expect(replayOf(asRead(dlqMessage(twice, { code: 'X', message: 'y' }, 'scorer', 1)), 'p.traces').ok).toBe(false); // a scorer record naming the traces topic
    expect(replayOf(asRead(d, { 'x-steward-dropped': 'value (9 bytes)' }), 'p.traces')).toEqual({ ok: false, reason: 'the DLQ record left out the original value (9 bytes)' });
    expect(replayOf({ ...m }, 'p.traces').ok).toBe(false);
    // a header named __proto__ stays a header (own property), never the object's prototype
    const proto: InMessage = asRead(d);
    putHeader(proto.headers, '__proto__', Buffer.from('x'));
    const p2 = replayOf(proto, 'p.traces');
    expect(p2.ok && Object.getPrototypeOf(p2.message.headers) === Object.prototype && String(Object.getOwnPropertyDescriptor(p2.message.headers, '__proto__')?.value)).toBe('x');
  });
  it('keeps every value of a header key the record carried more than once, in order', () => {
    const twice: InMessage = { ...m, headers: { keep: Buffer.from('me'), tag: Buffer.from('b') }, repeatedHeaders: { tag: [Buffer.from('a'), Buffer.from('b')] } };
    const out = dlqMessage(twice, { code: 'STEWARD_TRACE_JSON', message: 'bad' }, 'tripwire', 99);
    expect((out.headers!.tag as Buffer[]).map(String)).toEqual(['a', 'b']);
    expect(String(out.headers!.keep)).toBe('me');
    // the wire size counts each value with its key
    const once = dlqMessage({ ...twice, repeatedHeaders: undefined }, { code: 'STEWARD_TRACE_JSON', message: 'bad' }, 'tripwire', 99);
    expect(messageBytes(out) - messageBytes(once)).toBe('tag'.length + 1);
  });
  it('parses reply routes and ignores malformed ones or any outside the replies topic', () => {
    const allowed = { topic: 'p.replies', partitions: 4 };
    const h = replyHeaders({ topic: 'p.replies', partition: 3, correlation_id: 'c:1' });
    const withH = (hh: Record<string, string>): InMessage => ({ ...m, headers: Object.fromEntries(Object.entries(hh).map(([k, v]) => [k, Buffer.from(v)])) });
    expect(replyRoute(withH(h), allowed)).toEqual({ topic: 'p.replies', partition: 3, correlation_id: 'c:1' });
    expect(replyRoute(m, allowed)).toBeUndefined();
    const bads: Record<string, string>[] = [
      { 'x-steward-reply-partition': '-1' },
      { 'x-steward-reply-partition': '4' }, // past the last partition: the send would fail and stall the stage
      { 'x-steward-reply-partition': '1e0' },
      { 'x-steward-reply-partition': ' 1' },
      { 'x-steward-reply-topic': 'p.reviews' }, // an agent must not inject records into internal topics
      { 'x-steward-reply-topic': 'no-such-topic' },
      { 'x-steward-correlation-id': 'x'.repeat(257) },
    ];
    for (const bad of bads) expect(replyRoute(withH({ ...h, ...bad }), allowed), JSON.stringify(bad)).toBeUndefined();
  });
  it('names topics under a prefix', () => {
    const n = topicNames('acme.prod.');
    expect(n.trustDebt).toBe('acme.prod.trust-debt');
    expect(topicSpecs(n).find((s) => s.topic === n.replies)!.numPartitions).toBe(12);
    // the broker's arrival time is the reference for clamping agent-written trace timestamps
    expect(topicSpecs(n).find((s) => s.topic === n.traces)!.configEntries).toEqual([{ name: 'message.timestamp.type', value: 'LogAppendTime' }]);
  });
});

describe('trace action (contracts C1)', () => {
  const base = { trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z' };
  it('an object everywhere; on ACM hooks a string naming the hook itself', async () => {
    const { validateTrace } = await import('../../../../src/adapters/kafka/serde.js');
    expect(validateTrace({ ...base, hook: 'tool_call', action: { query: 'SELECT 1' } }).action).toEqual({ query: 'SELECT 1' });
    expect(validateTrace({ ...base, hook: 'task.pre', action: 'task.pre' }).action).toBe('task.pre');
    expect(() => validateTrace({ ...base, hook: 'task.pre', action: 'task.post' })).toThrow(/the action 'task.post' is not the hook 'task.pre'/);
    expect(() => validateTrace({ ...base, hook: 'tool_call', action: 5 })).toThrow(/STEWARD_TRACE_SCHEMA|trace invalid at \/action/);
  });
});

describe('trace ids are bounded (issue #22 item 4: they become Redis keys and ClickHouse sort keys)', () => {
  it('trace_id and agent_id up to 256 characters; longer is refused', async () => {
    const { validateTrace } = await import('../../../../src/adapters/kafka/serde.js');
    const t = (f: string, n: number) => ({ trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', [f]: 'x'.repeat(n) });
    for (const f of ['trace_id', 'agent_id', 'session_id']) {
      expect(() => validateTrace(t(f, 256))).not.toThrow();
      expect(() => validateTrace(t(f, 257)), f).toThrow(new RegExp(`/${f}: must NOT have more than 256 characters`));
    }
  });
});

describe('registerAvro retries a registry 5xx (the client library retries GETs only)', () => {
  /** A registry whose register() answers the given outcomes in turn (a number: that status as the client's ResponseError). */
  function registry(outcomes: (number | 'ok')[]): { reg: SchemaRegistry; calls: () => number } {
    let n = 0;
    const reg = {
      register: async () => {
        const o = outcomes[Math.min(n++, outcomes.length - 1)];
        if (o === 'ok') return { id: 42 };
        throw Object.assign(new Error(`status ${o}`), { name: 'ResponseError', status: o });
      },
    } as unknown as SchemaRegistry;
    return { reg, calls: () => n };
  }

  it('a 500 from a racing registration is tried again and the id returned', async () => {
    const r = registry([500, 500, 'ok']);
    expect(await registerAvro(r.reg, 'decision', 's-value', [1, 1, 1])).toBe(42);
    expect(r.calls()).toBe(3);
  });

  it('gives up after the last pause with the registry error', async () => {
    const r = registry([503]);
    await expect(registerAvro(r.reg, 'decision', 's-value', [1, 1])).rejects.toMatchObject({ status: 503 });
    expect(r.calls()).toBe(3);
  });

  it('a 4xx (incompatible, unauthorized) is not retried', async () => {
    for (const status of [409, 422, 401]) {
      const r = registry([status, 'ok']);
      await expect(registerAvro(r.reg, 'decision', 's-value', [1, 1])).rejects.toMatchObject({ status });
      expect(r.calls()).toBe(1);
    }
  });
});
