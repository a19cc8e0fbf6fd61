/** `steward debt` and `steward review` against real Redis and ClickHouse (in-process, stdout captured). */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { run as debt } from '../../../src/cli/commands/debt.js';
import { run as review } from '../../../src/cli/commands/review.js';
import { consumeMessages, services, uniqueName, withClickHouseDatabase, withRedis, withTopics } from '../setup/helpers.js';

let out: string[] = [];
let err: string[] = [];
beforeEach(() => {
  out = [];
  err = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (err.push(String(s)), true));
});
afterEach(() => vi.restoreAllMocks());
const json = () => out.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

describe('steward review / debt show (Redis)', () => {
  it('feeds review outcomes and remediation decisions, publishes every debt change, and shows the result', async () => {
    const topicPrefix = uniqueName('rv');
    await withTopics([`${topicPrefix}.trust-debt`], () => withRedis(async (redis, prefix) => {
      const r = ['--prefix', prefix, '--redis', services().redisUrl];
      const p = [...r, '--topic-prefix', topicPrefix];
      // seed some debt through the store the stream uses
      const { RedisTrustDebtStore } = await import('../../../src/adapters/redis/trust-debt-store.js');
      const { DEFAULT_TRUST_DEBT_CONFIG } = await import('../../../src/engine/trust-debt/index.js');
      await new RedisTrustDebtStore(redis, { prefix }).apply(
        { eventId: 't-0', tenant: 'acme', agentId: 'bot', atMs: Date.parse('2026-01-01T00:00:00Z'), kind: 'intervention', intervention: 'halt' },
        DEFAULT_TRUST_DEBT_CONFIG,
      );

      expect(await review(['approve', '--trace', 't-0', '--agent', 'bot', '--tenant', 'acme', '--at', '2026-01-01T00:00:00Z', ...p])).toBe(0);
      const approved = json()[0]!;
      expect(approved).toMatchObject({ eventId: 'review:t-0', cause: 'review_approved', before: 0.5, duplicate: false });
      expect(approved.after).toBeCloseTo(0.4, 15);

      out = [];
      expect(await review(['request', '--agent', 'bot', '--tenant', 'acme', '--reason', 'new guardrails', '--id', 'rq-cli', '--at', '2026-01-01T00:00:00Z', ...p])).toBe(0);
      expect(json()[0]).toMatchObject({ requestId: 'rq-cli', status: 'pending' });

      out = [];
      expect(await debt(['show', 'bot', '--tenant', 'acme', '--at', '2026-01-01T00:00:00Z', '--json', ...r])).toBe(0);
      const shown = json()[0]!;
      expect(shown.debt).toBeCloseTo(0.4, 15);
      expect(shown.level).toBe('elevated_monitoring');
      expect(shown.pending_remediations).toEqual([{ request_id: 'rq-cli', reason: 'new guardrails', at: '2026-01-01T00:00:00.000Z' }]);

      out = [];
      expect(await review(['approve', '--request', 'rq-cli', '--reviewer', 'alice', '--credit', '0.25', '--at', '2026-01-01T00:00:00Z', ...p])).toBe(0);
      const granted = json()[0]!;
      expect(granted.request).toMatchObject({ status: 'granted', reviewer: 'alice', credit: -0.25 });
      expect(granted.change.after).toBeCloseTo(0.15, 15);
      expect(granted.change.crossings).toEqual([{ threshold: 'elevated_monitoring', direction: 'down' }]);

      await expect(review(['deny', '--request', 'rq-cli', '--reviewer', 'bob', ...p])).rejects.toMatchObject({ code: 'STEWARD_REMEDIATION' });
      await expect(review(['approve', '--agent', 'bot', ...p])).rejects.toMatchObject({ code: 'STEWARD_USAGE' });

      // Every change above is an acgp.trust-debt event (ACGP-1004 §10.7), in the stage's message format.
      const events = (await consumeMessages(`${topicPrefix}.trust-debt`, 2)).map((m) => JSON.parse(m.value!.toString()) as Record<string, any>);
      expect(events.map((e) => [e.event_id, e.cause, e.agent_id, e.tenant, e.duplicate])).toEqual([
        ['review:t-0', 'review_approved', 'bot', 'acme', false],
        ['remediation:rq-cli', 'remediation_granted', 'bot', 'acme', false],
      ]);
      expect(events[1]!.after).toBeCloseTo(0.15, 15);
      expect(events[1]!.crossings).toEqual([{ threshold: 'elevated_monitoring', direction: 'down' }]);

      // --no-publish: Redis only; a repeated approval is a duplicate (same event id) and moves nothing.
      out = [];
      expect(await review(['approve', '--trace', 't-0', '--agent', 'bot', '--tenant', 'acme', '--no-publish', ...p])).toBe(0);
      expect(json()[0]).toMatchObject({ eventId: 'review:t-0', duplicate: true });
    }));
  });
});

describe('steward debt history (ClickHouse)', () => {
  it('lists the agent\'s debt changes in time order from trust_debt_events', async () => {
    await withClickHouseDatabase(async (db) => {
      const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
      try {
        await migrate(store);
        const row = (id: string, ts: number, cause: string, before: number, after: number, level: string, agent = "o'brien") => ({
          event_id: id, tenant: 'acme', agent_id: agent, ts_ms: ts, cause, before, after, level, previous_level: 'normal', crossings: [], trace_id: id, ingested_at_ms: 1,
        });
        await store.insert('trust_debt_events', [
          row('e2', 2000, 'intervention:flag', 0.5, 0.55, 'restricted_mode'),
          row('e1', 1000, 'intervention:halt', 0, 0.5, 'restricted_mode'),
          row('x1', 1500, 'intervention:halt', 0, 0.5, 'restricted_mode', 'someone-else'),
        ]);
      } finally {
        await store.close();
      }
      expect(await debt(['history', "o'brien", '--url', services().clickhouseUrl, '--database', db.name, '--json'])).toBe(0);
      const rows = json();
      expect(rows.map((r) => r.event_id)).toEqual(['e1', 'e2']);
      expect(rows[1]).toMatchObject({ cause: 'intervention:flag', before: 0.5, after: 0.55, level: 'restricted_mode' });
    });
  });

  it('says history is unavailable without ClickHouse settings', async () => {
    const saved = process.env.CLICKHOUSE_URL;
    delete process.env.CLICKHOUSE_URL;
    try {
      expect(await debt(['history', 'bot'])).toBe(1);
      expect(err.join('')).toMatch(/unavailable/);
    } finally {
      if (saved !== undefined) process.env.CLICKHOUSE_URL = saved;
    }
  });
});
