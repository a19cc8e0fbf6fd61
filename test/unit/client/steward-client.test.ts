import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_FINALIZE_TIMEOUT_MS, finalizeTimeoutFor, StewardClient } from '../../../src/client/steward-client.js';
import { KafkaAdapter, type BatchControl, type InBatch, type OutRecord, type StewardAdmin, type StewardConsumer, type StewardProducer } from '../../../src/adapters/kafka/client.js';
import { REPLY_HEADERS } from '../../../src/adapters/kafka/request-reply.js';
import type { Trace } from '../../../src/engine/types.js';
import { createLogger } from '../../../src/logger.js';

const trace: Trace = { trace_id: 't-1', agent_id: 'a1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'shell' };

/** A KafkaAdapter stand-in: `topics` is what listTopics returns; `adminDelayMs` slows every admin() call down. */
function fakeAdapter(o: { topics?: () => string[]; adminDelayMs?: number } = {}) {
  const state = { adminCalls: 0, sent: [] as OutRecord[], handler: undefined as undefined | ((b: InBatch, ctl: BatchControl) => Promise<void>), producersOpen: 0 };
  const adapter = Object.create(KafkaAdapter.prototype) as KafkaAdapter;
  Object.assign(adapter, {
    async admin(): Promise<StewardAdmin> {
      state.adminCalls++;
      if (o.adminDelayMs) await new Promise((r) => setTimeout(r, o.adminDelayMs));
      return {
        listTopics: async () => (o.topics ? o.topics() : ['p.replies']),
        topicOffsets: async () => [0, 1].map((partition) => ({ partition, high: '0', low: '0' })),
        disconnect: async () => undefined,
      } as unknown as StewardAdmin;
    },
    async producer(): Promise<StewardProducer> {
      state.producersOpen++;
      return {
        async send(records) {
          state.sent.push(...records);
        },
        async disconnect() {
          state.producersOpen--;
        },
      };
    },
    consumer(): StewardConsumer {
      let join: () => void = () => undefined;
      return {
        async subscribe() {},
        async runBatches(h) {
          state.handler = h;
          setImmediate(() => join());
        },
        seek() {},
        async stop() {},
        async disconnect() {},
        onCrash() {},
        onGroupJoin(fn) {
          join = () => fn({});
        },
      };
    },
  });
  const reply = async (value: object, correlation: string) => {
    const ctl = { resolveOffset() {}, heartbeat: async () => undefined, isRunning: () => true, isStale: () => false, commit: async () => undefined };
    await state.handler!({ topic: 'p.replies', partition: 1, highWatermark: '1', messages: [{ topic: 'p.replies', partition: 1, offset: '0', key: null, value: Buffer.from(JSON.stringify(value)), headers: { [REPLY_HEADERS.correlation]: Buffer.from(correlation), [REPLY_HEADERS.kind]: Buffer.from('decision') }, timestampMs: 0 }] }, ctl);
  };
  return { adapter, state, reply };
}

const client = (adapter: KafkaAdapter, extra: object = {}) => new StewardClient({ kafka: adapter, topicPrefix: 'p', replyPartition: 1, logger: createLogger({ level: 'silent' }), ...extra });

describe('StewardClient.decide', () => {
  it('missing replies topic: the governance fallback at once (no throw); the failed connect is retried on the next call', async () => {
    let topics: string[] = [];
    const { adapter, state } = fakeAdapter({ topics: () => topics });
    const c = client(adapter);
    const t0 = Date.now();
    const d1 = await c.decide(trace, { timeoutMs: 500 });
    expect(Date.now() - t0).toBeLessThan(450);
    expect(d1).toMatchObject({ intervention: 'flag', approved: true, fallback: true, stage: 'none' });
    expect(d1.fallback_reason).toMatch(/publish failed: replies topic p\.replies does not exist/);
    const d2 = await c.decide(trace, { timeoutMs: 500 });
    expect(d2.fallback).toBe(true);
    expect(state.adminCalls).toBe(2); // not cached
    topics = ['p.replies'];
    await c.decide(trace, { timeoutMs: 50 }); // connects now; no stage answers → timeout fallback
    expect(state.adminCalls).toBe(3);
    expect(state.sent.map((r) => r.topic)).toEqual(['p.traces']);
    await expect(c.publish(trace)).resolves.toBeUndefined();
    await c.close();
  });

  it('honours timeoutMs while connecting is slow', async () => {
    const { adapter } = fakeAdapter({ adminDelayMs: 800 });
    const c = client(adapter, { fallbackOnTimeout: 'deny' });
    const t0 = Date.now();
    const d = await c.decide(trace, { timeoutMs: 200 });
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(190);
    expect(took).toBeLessThan(1000);
    expect(d).toMatchObject({ intervention: 'block', approved: false, fallback: true, fallback_reason: 'timeout' });
    await c.close();
  });

  it('publish() rejects when the client cannot connect', async () => {
    const { adapter } = fakeAdapter({ topics: () => [] });
    const c = client(adapter);
    await expect(c.publish(trace)).rejects.toThrow(/replies topic p\.replies does not exist/);
    await c.close();
  });

  it('a rejection from the stage resolves decide() at once: block with the code, ids from the client trace, not a fallback, not cached', async () => {
    const { adapter, state, reply } = fakeAdapter();
    const c = client(adapter, { fallbackOnTimeout: 'cached_decision' });
    const pending = c.decide(trace, { timeoutMs: 5000 });
    for (let i = 0; i < 100 && state.sent.length === 0; i++) await new Promise((r) => setImmediate(r));
    const corr = state.sent[0].messages[0].headers![REPLY_HEADERS.correlation] as string;
    const t0 = Date.now();
    await reply({ trace_id: '', agent_id: 'a1', tenant: '', blueprint: '', intervention: 'block', approved: false, stage: 'none', halted: false, reasons: ['trace rejected'], tripwires: [], rules: [], latency_ms: 0, event_time_ms: 0, decided_at_ms: 0, hook: '', rejected: { code: 'STEWARD_TRACE_SCHEMA', message: '/timestamp: bad' } }, corr);
    const d = await pending;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(d).toMatchObject({ trace_id: 't-1', agent_id: 'a1', hook: 'tool_call', tool: 'shell', intervention: 'block', approved: false, stage: 'none', rejected: { code: 'STEWARD_TRACE_SCHEMA', message: '/timestamp: bad' } });
    expect(d.fallback).toBeUndefined();
    // The refusal did not become the cached decision for a2's fallback: no cached decision → allow_and_log (flag).
    expect(c.fallback(trace, 10).intervention).toBe('flag');
    await c.close();
  });

  it('close() answers callers still waiting with the fallback', async () => {
    const { adapter } = fakeAdapter();
    const c = client(adapter);
    const pending = c.decide(trace, { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 20));
    await c.close();
    await expect(pending).resolves.toMatchObject({ fallback: true, fallback_reason: 'client closed' });
  });

  const decision = (over: object = {}) => ({
    trace_id: 't-1', agent_id: 'a1', tenant: 'acme', blueprint: 'b@1', intervention: 'ok', approved: true, stage: 'none', halted: false, reasons: [], tripwires: [], rules: [],
    latency_ms: 1, event_time_ms: 0, decided_at_ms: 0, hook: 'tool_call', tool: 'shell', ...over,
  });
  const sentCorrelation = async (state: ReturnType<typeof fakeAdapter>['state']) => {
    for (let i = 0; i < 100 && state.sent.length === 0; i++) await new Promise((r) => setImmediate(r));
    return state.sent[0].messages[0].headers![REPLY_HEADERS.correlation] as string;
  };

  it("a reply naming another trace is ignored (copied reply headers); the trace's own decision resolves the call", async () => {
    const { adapter, state, reply } = fakeAdapter();
    const c = client(adapter, { fallbackOnTimeout: 'cached_decision' });
    const wire = { ...trace, trace_id: 'wire-1', tool: 'wire_transfer' };
    const pending = c.decide(wire, { timeoutMs: 5000 });
    const corr = await sentCorrelation(state);
    // Unguessable: instance id, sequence number and a random part.
    expect(corr).toMatch(new RegExp(`^${c.instanceId}:1\\.[0-9a-f]{16}$`));
    await reply(decision({ trace_id: 'harmless-9', tool: 'wire_transfer' }), corr);
    await reply(decision({ trace_id: 'wire-1', agent_id: 'other-agent', tool: 'wire_transfer' }), corr);
    let settled = false;
    void pending.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    // Neither became the cached decision either.
    expect(c.fallback(wire, 10)).toMatchObject({ intervention: 'flag', fallback: true });
    await reply(decision({ trace_id: 'wire-1', tool: 'wire_transfer', intervention: 'block', approved: false, stage: 'rule' }), corr);
    expect(await pending).toMatchObject({ trace_id: 'wire-1', intervention: 'block', approved: false });
    await c.close();
  });

  it('a timeoutMs beyond what a timer holds (or Infinity) waits instead of answering with the fallback at once', async () => {
    for (const timeoutMs of [Infinity, 2 ** 31, 1e12]) {
      const { adapter, state, reply } = fakeAdapter();
      const c = client(adapter);
      const pending = c.decide(trace, { timeoutMs });
      const corr = await sentCorrelation(state);
      await new Promise((r) => setTimeout(r, 30));
      await reply(decision(), corr);
      expect(await pending, String(timeoutMs)).toMatchObject({ intervention: 'ok', tenant: 'acme' });
      expect((await pending).fallback).toBeUndefined();
      await c.close();
    }
  });

  it('a trace the broker refuses as too large, or that cannot be encoded, is blocked (rejected), not given the approved fallback', async () => {
    const { adapter } = fakeAdapter();
    const tooLarge = Object.assign(new Error('The request included a message larger than the max message size the server will accept'), { type: 'MESSAGE_TOO_LARGE', retriable: false });
    let fail: unknown = tooLarge;
    const real = adapter.producer.bind(adapter);
    Object.assign(adapter, {
      async producer() {
        const p = await real();
        return { ...p, send: async () => { throw fail; } };
      },
    });
    const c = client(adapter, { tier: 'ACL-1' });
    expect(await c.decide(trace, { timeoutMs: 5000 })).toMatchObject({ intervention: 'block', approved: false, rejected: { code: 'STEWARD_TRACE_TOO_LARGE' } });
    fail = undefined;
    const big = { ...trace, args: { n: 10n } } as unknown as Trace; // JSON.stringify throws on a BigInt
    const d = await c.decide(big, { timeoutMs: 5000 });
    expect(d).toMatchObject({ intervention: 'block', approved: false, rejected: { code: 'STEWARD_TRACE_SCHEMA' } });
    expect(d.rejected!.message).toMatch(/cannot be encoded.*BigInt/);
    // Kafka itself failing is still the governance contract's case.
    fail = Object.assign(new Error('Connection error: ECONNREFUSED'), { retriable: true });
    expect(await c.decide(trace, { timeoutMs: 5000 })).toMatchObject({ fallback: true, intervention: 'flag' });
    await c.close();
  });

  it('a reply consumer kafkajs gives up on is replaced on the next call (before: every later call waited for replies nobody read)', async () => {
    const { adapter, state, reply } = fakeAdapter();
    const crashes: ((e: Error, restart: boolean) => void)[] = [];
    const made = adapter.consumer.bind(adapter);
    let consumers = 0;
    Object.assign(adapter, {
      consumer(o: never) {
        consumers++;
        const c = made(o);
        return { ...c, onCrash: (fn: (e: Error, restart: boolean) => void) => void crashes.push(fn) };
      },
    });
    const c = client(adapter);
    await c.connect();
    expect(consumers).toBe(1);
    crashes[0]!(new Error('The coordinator is not aware of this member'), true); // kafkajs restarts it itself: nothing to do
    expect(state.producersOpen).toBe(1);
    crashes[0]!(new Error('retries exhausted'), false);
    expect(state.producersOpen).toBe(0);
    const pending = c.decide(trace, { timeoutMs: 5000 });
    const corr = await sentCorrelation(state);
    expect(consumers).toBe(2);
    await reply(decision(), corr);
    expect(await pending).toMatchObject({ intervention: 'ok', tenant: 'acme' });
    await c.close();
  });

  it('a decision that arrives after its call timed out still feeds cached_decision', async () => {
    const { adapter, state, reply } = fakeAdapter();
    const c = client(adapter, { fallbackOnTimeout: 'cached_decision' });
    const first = await c.decide(trace, { timeoutMs: 20 });
    expect(first).toMatchObject({ fallback: true, intervention: 'flag' }); // nothing cached yet
    const corr = state.sent[0].messages[0].headers![REPLY_HEADERS.correlation] as string;
    await reply(decision({ intervention: 'block', approved: false, stage: 'rule' }), corr); // late
    expect(await c.decide({ ...trace, trace_id: 't-2' }, { timeoutMs: 20 })).toMatchObject({ fallback: true, intervention: 'block' });
    await c.close();
  });

  it('a trace with a lone surrogate in an id is refused before sending (Avro would rewrite it to U+FFFD)', async () => {
    const { adapter, state } = fakeAdapter();
    const c = client(adapter);
    const d = await c.decide({ ...trace, agent_id: 'a\ud800' }, { timeoutMs: 5000 });
    expect(d).toMatchObject({ intervention: 'block', approved: false, rejected: { code: 'STEWARD_TRACE_SCHEMA' } });
    expect(state.sent).toEqual([]);
    await c.close();
  });
});


describe('StewardClient.finalize (spec-decisions D40)', () => {
  const answer: Trace = { trace_id: 'fa-1', agent_id: 'a1', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: 'j-1', draft_answer: 'Refunded to card 4111 1111 1111 1111.' };
  const gateReply = (value: object, correlation: string) => ({ value, correlation });

  it('waits DEFAULT_FINALIZE_TIMEOUT_MS (2 x the 10 s judge timeout + 5 s) by default, while decide() keeps its 1 s', async () => {
    expect(DEFAULT_FINALIZE_TIMEOUT_MS).toBe(25_000);
    expect(finalizeTimeoutFor(4_000)).toBe(13_000);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { adapter } = fakeAdapter();
      const c = client(adapter);
      let fin: unknown;
      let dec: unknown;
      void c.finalize(answer).then((a) => (fin = a));
      void c.decide(trace).then((d) => (dec = d));
      await vi.advanceTimersByTimeAsync(1_000);
      // The governance contract's decide() fallback is unchanged: allow_and_log at ACL-2 after 1 s.
      expect(dec).toMatchObject({ fallback: true, intervention: 'flag', approved: true });
      await vi.advanceTimersByTimeAsync(25_000 - 1_000 - 1);
      expect(fin).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(fin).toMatchObject({ trace_id: 'fa-1', job_id: 'j-1', fallback: true, fallback_reason: 'timeout', action: 'block', approved: false });
      await c.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('finalizeTimeoutMs sets the default wait; a call\'s timeoutMs still wins', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { adapter } = fakeAdapter();
      const c = client(adapter, { finalizeTimeoutMs: 40_000, defaultTimeoutMs: 5_000 });
      let a: unknown;
      let b: unknown;
      void c.finalize(answer).then((x) => (a = x));
      void c.finalize({ ...answer, trace_id: 'fa-2' }, { timeoutMs: 100 }).then((x) => (b = x));
      await vi.advanceTimersByTimeAsync(100);
      expect(b).toMatchObject({ trace_id: 'fa-2', fallback: true });
      await vi.advanceTimersByTimeAsync(39_899);
      expect(a).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(a).toMatchObject({ trace_id: 'fa-1', fallback: true });
      await c.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('an allow fallback never approves: a draft with a card number (and a clean one) is blocked, unchecked', async () => {
    for (const fallbackOnTimeout of ['allow_and_log', 'cached_decision', 'deny'] as const) {
      const { adapter } = fakeAdapter();
      const c = client(adapter, { fallbackOnTimeout, tier: 'ACL-1' });
      for (const t of [answer, { ...answer, trace_id: 'fa-clean', draft_answer: 'All tests pass.' }]) {
        const a = await c.finalize(t, { timeoutMs: 20 });
        expect(a, fallbackOnTimeout).toMatchObject({ trace_id: t.trace_id, action: 'block', intervention: 'block', approved: false, fallback: true, degraded: true, verdict: null });
        expect(a.directive).toMatch(/draft was not checked; do not deliver it/);
      }
      await c.close();
    }
    // escalate: held for a human, still not delivered.
    const { adapter } = fakeAdapter();
    const c = client(adapter, { tier: 'ACL-4' });
    expect(await c.finalize(answer, { timeoutMs: 20 })).toMatchObject({ action: 'block', intervention: 'escalate', approved: false, fallback: true });
    await c.close();
  });

  it('no Kafka (replies topic missing) or a closed client: blocked at once, not the approved fallback', async () => {
    const { adapter } = fakeAdapter({ topics: () => [] });
    const c = client(adapter);
    const t0 = performance.now();
    const a = await c.finalize(answer);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(a).toMatchObject({ action: 'block', approved: false, fallback: true });
    expect(a.fallback_reason).toMatch(/publish failed/);
    const ok = fakeAdapter();
    const c2 = client(ok.adapter);
    const pending = c2.finalize(answer);
    await new Promise((r) => setTimeout(r, 20));
    await c2.close();
    expect(await pending).toMatchObject({ action: 'block', approved: false, fallback: true, fallback_reason: 'client closed' });
  });

  it('decide() on a final_answer or user_feedback: blocked at once, unsent, STEWARD_USAGE naming finalize()/publish() — not the approved fallback (D49)', async () => {
    const { adapter, state } = fakeAdapter();
    // ACL-2 allow_and_log: the fallback decide() used to answer (after its timeout) was flag, approved: true.
    const c = client(adapter, { tier: 'ACL-2' });
    const ssn = { ...answer, draft_answer: 'Your SSN is 123-45-6789.' };
    const t0 = performance.now();
    const d = await c.decide(ssn, { timeoutMs: 5_000 });
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(d).toMatchObject({ trace_id: 'fa-1', agent_id: 'a1', hook: 'final_answer', intervention: 'block', approved: false, rejected: { code: 'STEWARD_USAGE' } });
    expect(d.fallback).toBeUndefined();
    expect(d.rejected!.message).toMatch(/finalize\(\)/);
    const fb = await c.decide({ trace_id: 'fb-1', agent_id: 'a1', timestamp: '2026-01-01T00:00:00Z', hook: 'user_feedback', job_id: 'j-1', feedback: 'up' } as Trace);
    expect(fb).toMatchObject({ intervention: 'block', approved: false, rejected: { code: 'STEWARD_USAGE' } });
    expect(fb.rejected!.message).toMatch(/publish\(\)/);
    expect(state.sent).toHaveLength(0);
    // finalize() still sends the same trace.
    void c.finalize(ssn, { timeoutMs: 50 });
    for (let i = 0; i < 100 && state.sent.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(state.sent).toHaveLength(1);
    await c.close();
  });

  it("the gate's own answer still resolves the call", async () => {
    const { adapter, state } = fakeAdapter();
    const c = client(adapter);
    const pending = c.finalize(answer, { timeoutMs: 5_000 });
    for (let i = 0; i < 100 && state.sent.length === 0; i++) await new Promise((r) => setImmediate(r));
    const corr = state.sent[0].messages[0].headers![REPLY_HEADERS.correlation] as string;
    const g = gateReply({ trace_id: 'fa-1', agent_id: 'a1', job_id: 'j-1', intervention: 'block', approved: false, verdict: 'FAIL', quality_score: null, reason_codes: ['SAFETY_OR_POLICY_VIOLATION'], fix_mode: null, attempt_index: 0, action: 'block', judged_by: 'patterns', missing_requirements: [], directive: 'x', degraded: false, event_time_ms: 0, decided_at_ms: 0 }, corr);
    const ctl = { resolveOffset() {}, heartbeat: async () => undefined, isRunning: () => true, isStale: () => false, commit: async () => undefined };
    await state.handler!({ topic: 'p.replies', partition: 1, highWatermark: '1', messages: [{ topic: 'p.replies', partition: 1, offset: '0', key: null, value: Buffer.from(JSON.stringify(g.value)), headers: { [REPLY_HEADERS.correlation]: Buffer.from(g.correlation), [REPLY_HEADERS.kind]: Buffer.from('gate') }, timestampMs: 0 }] }, ctl);
    expect(await pending).toMatchObject({ action: 'block', judged_by: 'patterns', reason_codes: ['SAFETY_OR_POLICY_VIOLATION'] });
    expect((await pending).fallback).toBeUndefined();
    await c.close();
  });
});
