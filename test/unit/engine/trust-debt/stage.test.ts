// The trust-debt stage's §10.6/§10.4.2 duties without services: per-trace log level by debt level,
// crossing logs, re-tiering review outcomes on acgp.reviews, the audit sweep's published credits, and
// the steward.yaml settings of the sweep.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { InMessage, OutRecord } from '../../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../../../src/config/steward-config.js';
import { trustDebtMaxRecordAgeMs, TrustDebtProcessor, startTrustDebtAuditSweep } from '../../../../src/consumers/trust-debt.js';
import { DEFAULT_TRUST_DEBT_CONFIG, HOUR_MS, MemoryTrustDebtStore, trustDebtConfigFrom } from '../../../../src/engine/trust-debt/index.js';
import { StewardMetrics } from '../../../../src/observability/metrics.js';

const topics = topicNames('t');
const T0 = Date.parse('2026-02-01T00:00:00Z');

function capture(level = 'info') {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

let offset = 0;
const msg = (topic: string, value: object, key: string): InMessage => ({
  topic,
  partition: 0,
  offset: String(offset++),
  key: Buffer.from(key),
  value: Buffer.from(JSON.stringify(value)),
  headers: {},
  timestampMs: T0,
});
const verdict = (trace: string, agent: string, intervention: string, atMs = T0) =>
  msg(topics.verdicts, { trace_id: trace, agent_id: agent, tenant: 'acme', blueprint: 'b@1.0', intervention, event_time_ms: atMs }, agent);
const PINO_INFO = 30;
const PINO_WARN = 40;
const PINO_DEBUG = 20;

describe('trust-debt stage: threshold actions', () => {
  it('logs each trace at debug while normal and at info (agent, level, debt) from elevated_monitoring; crossings are logged', async () => {
    const { logger, lines } = capture('debug');
    const store = new MemoryTrustDebtStore();
    const p = new TrustDebtProcessor({ store, configFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), logger });
    await p.process(verdict('t1', 'bot', 'block')); // 0.15: normal
    const traceLines = () => lines.filter((l) => l.trace_id !== undefined);
    expect(traceLines()).toEqual([expect.objectContaining({ level: PINO_DEBUG, trace_id: 't1', agent_id: 'bot', debt_level: 'normal' })]);
    expect(traceLines()[0]).toMatchObject({ debt: 0.15 });

    await p.process(verdict('t2', 'bot', 'block')); // 0.30: crosses elevated_monitoring
    await p.process(verdict('t3', 'bot', 'ok')); // stays elevated
    const [, l2, l3] = traceLines();
    expect(l2).toMatchObject({ level: PINO_INFO, trace_id: 't2', agent_id: 'bot', tenant: 'acme', intervention: 'block', debt_level: 'elevated_monitoring' });
    expect(l2!.debt).toBeCloseTo(0.3, 12);
    expect(l3).toMatchObject({ level: PINO_INFO, trace_id: 't3', intervention: 'ok', msg: 'trace of an agent under elevated_monitoring' });
    const crossing = lines.filter((l) => l.threshold !== undefined);
    expect(crossing).toEqual([expect.objectContaining({ level: PINO_WARN, agent_id: 'bot', threshold: 'elevated_monitoring', direction: 'up', event_id: 't2' })]);

    // a redelivered trace moves nothing and is not logged again
    const n = lines.length;
    const dup = await p.process(verdict('t3', 'bot', 'ok'));
    expect(JSON.parse(String(dup[0]!.message.value)).duplicate).toBe(true);
    expect(lines.length).toBe(n);
  });

  it('uses the blueprint\'s thresholds: a lower elevated_monitoring makes the same debt log at info', async () => {
    const { logger, lines } = capture('info');
    const strict = trustDebtConfigFrom({ thresholds: { elevated_monitoring: 0.1 } });
    const p = new TrustDebtProcessor({ store: new MemoryTrustDebtStore(), configFor: (bp) => (bp === 'b@1.0' ? strict : DEFAULT_TRUST_DEBT_CONFIG), tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), logger });
    await p.process(verdict('s1', 'strict-bot', 'block'));
    expect(lines.filter((l) => l.trace_id === 's1')).toEqual([expect.objectContaining({ level: PINO_INFO, debt_level: 'elevated_monitoring', debt: 0.15 })]);
  });

  it('a gate judge result moves debt under its blueprint\'s settings (D50); records without one use the defaults', async () => {
    const heavy = trustDebtConfigFrom({ accumulation: { block: 0.4 } });
    const p = new TrustDebtProcessor({ store: new MemoryTrustDebtStore(), configFor: (bp) => (bp === 'g@1.0' ? heavy : DEFAULT_TRUST_DEBT_CONFIG), tenantOf: () => 'acme', topics, metrics: new StewardMetrics() });
    const judged = (id: string, agent: string, extra: object) =>
      msg(topics.gate, { event: 'final_alignment_judge_result', event_id: `fajr:${id}`, trace_id: id, agent_id: agent, tenant: 'acme', ts_ms: T0, trust_debt: { intervention: 'block', severity: 'standard', no_debt: false }, ...extra }, agent);
    const [a] = await p.process(judged('fa-1', 'g-bot', { blueprint: 'g@1.0' }));
    expect(JSON.parse(String(a!.message.value))).toMatchObject({ event_id: 'fajr:fa-1', after: 0.4 });
    const [b] = await p.process(judged('fa-2', 'old-bot', {}));
    expect(JSON.parse(String(b!.message.value))).toMatchObject({ event_id: 'fajr:fa-2', after: DEFAULT_TRUST_DEBT_CONFIG.accumulation.block });
  });

  it('a re-tiering review outcome on acgp.reviews is accepted (not dead-lettered) and moves no debt', async () => {
    const { logger, lines } = capture('info');
    const store = new MemoryTrustDebtStore();
    const p = new TrustDebtProcessor({ store, configFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), logger });
    await p.process(verdict('h1', 'bad', 'halt'));
    const out = await p.process(
      msg(topics.reviews, { event_id: 'retier:acme:bad:1', agent_id: 'bad', tenant: 'acme', kind: 'retier_resolved', decision: 'keep', reviewer: 'carol', note: 'fine', timestamp: T0 }, 'bad'),
    );
    expect(out).toEqual([]);
    expect((await store.current('acme', 'bad', T0, DEFAULT_TRUST_DEBT_CONFIG)).debt).toBe(0.5);
    expect(lines.find((l) => l.event_id === 'retier:acme:bad:1')).toMatchObject({ decision: 'keep', reviewer: 'carol', agent_id: 'bad' });
    await expect(p.process(msg(topics.reviews, { event_id: 'x', agent_id: 'bad', kind: 'made_up', timestamp: T0 }, 'bad'))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
  });

  it('a record stamped more than 6/7 of the dedup TTL ago is refused (STEWARD_TRUST_DEBT_STALE) and moves nothing', async () => {
    expect(trustDebtMaxRecordAgeMs(7 * 86_400)).toBe(6 * 86_400_000);
    const store = new MemoryTrustDebtStore();
    const wall = T0 + 10 * 86_400_000;
    const p = new TrustDebtProcessor({ store, configFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), maxRecordAgeMs: trustDebtMaxRecordAgeMs(7 * 86_400), nowMs: () => wall });
    const stamped = (m: InMessage, ms: number): InMessage => ({ ...m, timestampMs: ms });
    await expect(p.process(stamped(verdict('old', 'agent-z', 'block'), wall - 6 * 86_400_000 - 1))).rejects.toMatchObject({ code: 'STEWARD_TRUST_DEBT_STALE', retryable: false });
    expect((await store.current('acme', 'agent-z', wall, DEFAULT_TRUST_DEBT_CONFIG)).debt).toBe(0);
    expect(await p.process(stamped(verdict('young', 'agent-z', 'block'), wall - 6 * 86_400_000))).toHaveLength(1);
    // a record that moves nothing (a decision that did not halt) is never refused
    expect(await p.process(stamped(msg(topics.decisions, { trace_id: 'd', agent_id: 'agent-z', halted: false, intervention: 'ok' }, 'agent-z'), 0))).toEqual([]);
  });

  it('a review applied while the pipeline is behind leaves due audit credits for later; interventions never ask', async () => {
    const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 24, credit: -0.1 } } });
    let behind = true;
    let asked = 0;
    const store = new MemoryTrustDebtStore();
    const p = new TrustDebtProcessor({ store, configFor: () => cfg, tenantOf: () => 'acme', topics, metrics: new StewardMetrics(), pipelineBehind: async () => (asked++, behind) });
    await p.process(verdict('h3', 'agent-y', 'halt'));
    expect(asked).toBe(0);
    const review = (id: string, atMs: number) => msg(topics.reviews, { event_id: id, agent_id: 'agent-y', tenant: 'acme', kind: 'review_approved', timestamp: atMs }, 'agent-y');
    const held = await p.process(review('rv-a', T0 + 30 * HOUR_MS));
    expect(asked).toBe(1);
    expect(held.map((o) => JSON.parse(String(o.message.value)).cause)).toEqual(['review_approved']);
    behind = false;
    const next = await p.process(review('rv-b', T0 + 31 * HOUR_MS));
    expect(next.map((o) => JSON.parse(String(o.message.value)).cause)).toEqual(['good_behavior_audit', 'review_approved']);
  });

  it('a review whose credit is not a number in [-1, 1] (or whose tenant is not a string) is dead-lettered and moves no debt', async () => {
    const store = new MemoryTrustDebtStore();
    const p = new TrustDebtProcessor({ store, configFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', topics, metrics: new StewardMetrics() });
    await p.process(verdict('h2', 'agent-x', 'halt'));
    const review = (extra: object, id: string) => msg(topics.reviews, { event_id: id, agent_id: 'agent-x', tenant: 'acme', kind: 'review_approved', timestamp: T0, ...extra }, 'agent-x');
    for (const [i, bad] of [{ credit: 'n/a' }, { credit: Number.MAX_VALUE }, { credit: 5 }, { credit: [0.1] }, { tenant: 42 }].entries()) {
      await expect(p.process(review(bad, `r-bad-${i}`)), JSON.stringify(bad)).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
    }
    expect((await store.current('acme', 'agent-x', T0, DEFAULT_TRUST_DEBT_CONFIG)).debt).toBe(0.5);
    await p.process(review({ credit: -0.1 }, 'r-ok'));
    expect((await store.current('acme', 'agent-x', T0, DEFAULT_TRUST_DEBT_CONFIG)).debt).toBeCloseTo(0.4, 12);
  });
});

describe('trust-debt stage: audit sweep', () => {
  it('credits nothing while the stage still has records from before the cutoff to apply (a backlog past the lag)', async () => {
    const store = new MemoryTrustDebtStore();
    const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 24, credit: -0.1 } } });
    await store.apply({ eventId: 'h-0', tenant: 'acme', agentId: 'h', atMs: T0, kind: 'intervention', intervention: 'halt' }, cfg);
    const clock = T0 + 27 * HOUR_MS;
    let behind = ['t.verdicts/2'];
    const asked: number[] = [];
    const { logger, lines } = capture('warn');
    const sweep = startTrustDebtAuditSweep({
      store,
      producer: { send: async () => undefined },
      topics,
      cfgFor: () => cfg,
      logger,
      intervalMs: 3_600_000,
      lagMs: HOUR_MS,
      now: () => clock,
      backlogBefore: async (cutoff) => (asked.push(cutoff), behind),
    });
    try {
      expect(await sweep.runOnce()).toEqual([]);
      expect(asked).toEqual([clock - HOUR_MS]);
      expect(lines.find((l) => l.msg === 'audit sweep held back: the pipeline has older records still to process')).toMatchObject({ behind: ['t.verdicts/2'], partitions: 1 });
      // The backlog applied: the window [T0, T0 + 24 h] is credited now.
      behind = [];
      expect((await sweep.runOnce()).map((c) => c.eventId)).toEqual([`audit:acme:h:${T0 + 24 * HOUR_MS}`]);
    } finally {
      await sweep.stop();
    }
  });

  it('publishes each credit it grants once, as a trust-debt event, with the agent\'s own settings', async () => {
    const store = new MemoryTrustDebtStore();
    const cfgA = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 24, credit: -0.1 } } });
    const cfgB = trustDebtConfigFrom({ recovery: { good_behavior_audit: {} } }); // the §10.1 example: 168 h, −0.20
    const cfgFor = (_t: string, agent: string) => (agent === 'a' ? cfgA : agent === 'b' ? cfgB : DEFAULT_TRUST_DEBT_CONFIG);
    await store.apply({ eventId: 'a-0', tenant: 'acme', agentId: 'a', atMs: T0, kind: 'intervention', intervention: 'halt' }, cfgA);
    await store.apply({ eventId: 'b-0', tenant: 'acme', agentId: 'b', atMs: T0, kind: 'intervention', intervention: 'halt' }, cfgB);
    // c's blueprint configures no audit: never credited, however long it behaves
    await store.apply({ eventId: 'c-0', tenant: 'acme', agentId: 'c', atMs: T0, kind: 'intervention', intervention: 'halt' }, DEFAULT_TRUST_DEBT_CONFIG);
    const sent: OutRecord[] = [];
    let clock = T0 + 24 * HOUR_MS + HOUR_MS; // lag 1 h: a's first window (24 h) has just become due
    const sweep = startTrustDebtAuditSweep({
      store,
      producer: { send: async (r) => void sent.push(...r) },
      topics,
      cfgFor,
      intervalMs: 3_600_000,
      lagMs: HOUR_MS,
      now: () => clock,
    });
    try {
      const granted = await sweep.runOnce();
      expect(granted.map((c) => c.eventId)).toEqual([`audit:acme:a:${T0 + 24 * HOUR_MS}`]);
      const msgs = sent.flatMap((r) => r.messages.map((m) => ({ topic: r.topic, key: m.key, v: JSON.parse(String(m.value)) })));
      expect(msgs).toHaveLength(1);
      expect(msgs[0]).toMatchObject({ topic: topics.trustDebt, key: 'a', v: { event_id: `audit:acme:a:${T0 + 24 * HOUR_MS}`, cause: 'good_behavior_audit', agent_id: 'a', tenant: 'acme', duplicate: false } });
      expect(msgs[0]!.v.after).toBeCloseTo(msgs[0]!.v.before - 0.1, 12);
      expect(await sweep.runOnce()).toEqual([]); // same window: nothing more
      expect(sent.flatMap((r) => r.messages)).toHaveLength(1);
      clock = T0 + 168 * HOUR_MS + HOUR_MS; // b's 168 h window and a's further windows
      const next = await sweep.runOnce();
      expect(next.filter((c) => c.agentId === 'b')).toHaveLength(1);
      expect(next.filter((c) => c.agentId === 'c')).toEqual([]);
      // a: the further 24 h windows are settled in one step, reported as one change at the last credited
      // window: 0.375 at 24 h → 0.256 (48 h) → 0.143 (72 h) → 0.036 (96 h) → 0.034 − 0.1 hits the floor at
      // 120 h; the windows ending at 144 h and 168 h complete at the floor without credit
      const a = next.filter((c) => c.agentId === 'a');
      expect(a.map((c) => [c.eventId, c.atMs, c.after])).toEqual([[`audit:acme:a:${T0 + 120 * HOUR_MS}`, T0 + 120 * HOUR_MS, 0]]);
      expect(a[0]!.before).toBeCloseTo(0.375 * 0.95 ** 4, 12); // the debt those windows would have left without credit
      expect(sent.flatMap((r) => r.messages)).toHaveLength(1 + next.length);
    } finally {
      await sweep.stop();
    }
  });

  it('steward.yaml trust_debt block: interval and lag with defaults, 0 turns the sweep off, negatives rejected', () => {
    expect(buildConfig({}, {}).trustDebt).toEqual({ auditSweepIntervalMs: 900_000, auditSweepLagMs: 3_600_000, dedupTtlSeconds: 604_800 });
    expect(buildConfig({ trust_debt: { audit_sweep_interval_ms: 0, audit_sweep_lag_ms: 5 } }, {}).trustDebt).toEqual({ auditSweepIntervalMs: 0, auditSweepLagMs: 5, dedupTtlSeconds: 604_800 });
    expect(() => buildConfig({ trust_debt: { audit_sweep_interval_ms: -1 } }, {})).toThrow(/audit_sweep_interval_ms/);
    expect(() => buildConfig({ trust_debt: { sweep: 1 } }, {})).toThrow(/unknown key 'sweep'/);
  });
});
