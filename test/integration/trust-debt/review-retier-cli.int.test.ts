// `steward review retier list|resolve` (real Redis + Kafka) and `steward debt show|history` with the
// trust_debt settings of the agent's blueprint (registry + blueprint directory, as `steward run` selects).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { run as debt } from '../../../src/cli/commands/debt.js';
import { run as review } from '../../../src/cli/commands/review.js';
import { DEFAULT_TRUST_DEBT_CONFIG, trustDebtConfigFrom } from '../../../src/engine/trust-debt/index.js';
import { Collector, withPipelineEnv } from '../pipeline/harness.js';
import { services, waitFor, withClickHouseDatabase, withRedis } from '../setup/helpers.js';

let out: string[] = [];
beforeEach(() => {
  out = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => vi.restoreAllMocks());
const json = () => out.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
const T0 = Date.parse('2026-05-01T00:00:00Z');

describe('steward review retier (Redis + Kafka)', () => {
  it('lists queued re-tiering reviews; resolve removes the agent\'s requests and publishes an auditable review event', async () => {
    await withPipelineEnv('td-retier', async ({ cfg, topics, adapter }) => {
      await withRedis(async (redis, prefix) => {
        const p = ['--prefix', prefix, '--redis', services().redisUrl, '--topic-prefix', cfg.topics.prefix];
        const store = new RedisTrustDebtStore(redis, { prefix });
        const severe = (id: string, agentId: string, tenant = 'acme') =>
          store.apply({ eventId: id, tenant, agentId, atMs: T0, kind: 'intervention', intervention: 'block', severity: 'severe' }, DEFAULT_TRUST_DEBT_CONFIG);
        await severe('t1', 'rogue');
        await severe('t2', 'other');
        await severe('t3', 'rogue', 'globex');

        expect(await review(['retier', 'list', '--json', ...p])).toBe(0);
        expect(json().map((r) => `${r.tenant}/${r.agent_id}`)).toEqual(['acme/rogue', 'acme/other', 'globex/rogue']);
        out = [];
        expect(await review(['retier', 'list', '--tenant', 'globex', '--json', ...p])).toBe(0);
        expect(json()).toEqual([expect.objectContaining({ tenant: 'globex', agent_id: 'rogue', event_id: 't3', at_ms: T0, debt: 0.75 })]);

        const reviews = await new Collector(adapter, [topics.reviews]).start();
        try {
          out = [];
          const at = '2026-05-02T10:00:00Z';
          expect(await review(['retier', 'resolve', 'rogue', '--tenant', 'acme', '--decision', 'keep', '--by', 'carol', '--note', 'false positives', '--at', at, ...p])).toBe(0);
          const res = json()[0]!;
          expect(res.resolved).toEqual([expect.objectContaining({ tenant: 'acme', agent_id: 'rogue', event_id: 't1' })]);
          const ev = await waitFor(() => reviews.json(topics.reviews)[0], { timeoutMs: 15_000, message: 'review event on acgp.reviews' });
          expect(ev).toEqual({
            event_id: `retier:acme:rogue:${Date.parse(at)}`,
            agent_id: 'rogue',
            tenant: 'acme',
            kind: 'retier_resolved',
            decision: 'keep',
            reviewer: 'carol',
            note: 'false positives',
            timestamp: '2026-05-02T10:00:00.000Z',
            requests: [{ event_id: 't1', at_ms: T0, debt: 0.75 }],
          });
          expect(reviews.on(topics.reviews)[0]!.key!.toString()).toBe('rogue');
          // removed from the queue; the other tenant's request for the same agent id stays
          expect((await store.retierQueue()).map((r) => `${r.tenant}/${r.agentId}`)).toEqual(['acme/other', 'globex/rogue']);
          // resolving again: nothing queued → error, no second event
          await expect(review(['retier', 'resolve', 'rogue', '--tenant', 'acme', '--decision', 'retier', '--by', 'carol', ...p])).rejects.toMatchObject({ code: 'STEWARD_REMEDIATION' });
          expect(reviews.json(topics.reviews)).toHaveLength(1);
          // the debt itself is untouched by a re-tiering review
          expect((await store.current('acme', 'rogue', T0, DEFAULT_TRUST_DEBT_CONFIG)).debt).toBe(0.75);
        } finally {
          await reviews.stop();
        }
        await expect(review(['retier', 'resolve', 'other', '--decision', 'maybe', '--by', 'x', ...p])).rejects.toMatchObject({ code: 'STEWARD_USAGE' });
        await expect(review(['retier', 'resolve', 'other', '--decision', 'keep', ...p])).rejects.toMatchObject({ code: 'STEWARD_USAGE' });
        await expect(review(['retier', 'purge', ...p])).rejects.toMatchObject({ code: 'STEWARD_USAGE' });
      });
    });
  });
});

describe('steward debt show/history use the agent\'s blueprint trust_debt settings', () => {
  const BP = `
id: ops/watched@1.0
version: "1.0.0"
description: stricter trust debt
scope: { domains: [ops] }
checks:
  - id: always
    when: { hook: output }
    metric: { name: candour, weight: 1, check: { type: llm, args: { prompt_template: "Check the answer for candour" } } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
trust_debt:
  decay: { rate: 0.5, period_hours: 24 }
  thresholds: { elevated_monitoring: 0.1, restricted_mode: 0.15, re_tiering_review: 0.9 }
  recovery: { successful_review_credit: -0.05 }
`;
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'steward-debt-bp-'));
    writeFileSync(join(dir, 'watched.yaml'), BP);
    writeFileSync(join(dir, 'agents.yaml'), 'agents:\n  - id: ops-bot\n    tenant: initech\n    tier: ACL-2\n    domains: [ops]\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('show: level, thresholds and decay are the blueprint\'s, the tenant the registry\'s', async () => {
    await withRedis(async (redis, prefix) => {
      const strict = trustDebtConfigFrom({ decay: { rate: 0.5, period_hours: 24 }, thresholds: { elevated_monitoring: 0.1, restricted_mode: 0.15, re_tiering_review: 0.9 } });
      const store = new RedisTrustDebtStore(redis, { prefix });
      await store.apply({ eventId: 'b1', tenant: 'initech', agentId: 'ops-bot', atMs: T0, kind: 'intervention', intervention: 'block' }, strict);
      const p = ['--prefix', prefix, '--redis', services().redisUrl, '--blueprints', dir, '--agents', join(dir, 'agents.yaml')];
      expect(await debt(['show', 'ops-bot', '--at', new Date(T0).toISOString(), '--json', ...p])).toBe(0);
      const now = json()[0]!;
      // 0.15 is restricted_mode here (the §10 default would say normal)
      expect(now).toMatchObject({ tenant: 'initech', debt: 0.15, level: 'restricted_mode', blueprint: 'ops/watched@1.0', thresholds: { elevated_monitoring: 0.1, restricted_mode: 0.15, re_tiering_review: 0.9 } });
      out = [];
      // one day later the blueprint's decay (0.5/24 h) halves it: 0.075 → normal (default decay would keep 0.1425)
      expect(await debt(['show', 'ops-bot', '--at', new Date(T0 + 24 * 3_600_000).toISOString(), '--json', ...p])).toBe(0);
      const later = json()[0]!;
      expect(later.debt).toBeCloseTo(0.075, 12);
      expect(later.level).toBe('normal');
      out = [];
      expect(await debt(['show', 'ops-bot', '--at', new Date(T0).toISOString(), ...p])).toBe(0);
      expect(out.join('')).toMatch(/settings {3}blueprint ops\/watched@1\.0: thresholds 0\.1\/0\.15\/0\.9, decay 0\.5 per 24 h/);
      // an agent the registry does not scope into the blueprint keeps the defaults of the global set
      out = [];
      expect(await debt(['show', 'stranger', '--at', new Date(T0).toISOString(), '--json', ...p])).toBe(0);
      expect(json()[0]).toMatchObject({ tenant: 'default', thresholds: { elevated_monitoring: 0.3, restricted_mode: 0.5, re_tiering_review: 0.75 } });
      await expect(debt(['show', 'ops-bot', '--blueprints', join(dir, 'missing'), ...p.slice(0, 4)])).rejects.toMatchObject({ code: 'STEWARD_USAGE' });
    });
  });

  it('review approve credits the blueprint\'s successful_review_credit to the registry\'s tenant', async () => {
    await withRedis(async (redis, prefix) => {
      const strict = trustDebtConfigFrom({ thresholds: { elevated_monitoring: 0.1, restricted_mode: 0.15, re_tiering_review: 0.9 } });
      await new RedisTrustDebtStore(redis, { prefix }).apply({ eventId: 'b1', tenant: 'initech', agentId: 'ops-bot', atMs: T0, kind: 'intervention', intervention: 'block' }, strict);
      const p = ['--prefix', prefix, '--redis', services().redisUrl, '--blueprints', dir, '--agents', join(dir, 'agents.yaml'), '--no-publish'];
      expect(await review(['approve', '--trace', 'b1', '--agent', 'ops-bot', '--at', new Date(T0).toISOString(), ...p])).toBe(0);
      const change = json()[0]!;
      // -0.05 from the blueprint (the §10 default would be -0.1 → 0.05)
      expect(change).toMatchObject({ tenant: 'initech', eventId: 'review:b1', before: 0.15, previousLevel: 'restricted_mode' });
      expect(change.after).toBeCloseTo(0.1, 12);
    });
  });

  it('history: prints the blueprint\'s settings above the recorded changes', async () => {
    await withClickHouseDatabase(async (db) => {
      const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
      try {
        await migrate(store);
        await store.insert('trust_debt_events', [
          { event_id: 'b1', tenant: 'initech', agent_id: 'ops-bot', ts_ms: T0, cause: 'intervention:block', before: 0, after: 0.15, level: 'restricted_mode', previous_level: 'normal', crossings: [], trace_id: 'b1', ingested_at_ms: 1 },
        ]);
      } finally {
        await store.close();
      }
      expect(await debt(['history', 'ops-bot', '--url', services().clickhouseUrl, '--database', db.name, '--blueprints', dir, '--agents', join(dir, 'agents.yaml')])).toBe(0);
      const text = out.join('');
      expect(text.split('\n')[0]).toBe('settings   blueprint ops/watched@1.0: thresholds 0.1/0.15/0.9, decay 0.5 per 24 h');
      expect(text).toMatch(/intervention:block\s+0\.0000 → 0\.1500 {2}restricted_mode/);
    });
  });
});
