// Good-behaviour audit (ACGP-1004 §10.4.2) by the periodic sweep of the trust-debt stage, on real Redis,
// Kafka and ClickHouse: the credit is granted once (by the sweep), published to acgp.trust-debt in the
// same shape as every other debt change and landed by the sink; neither the lazy path nor a second
// sweep credits the window again; concurrent sweeps from several instances never double-credit.
// Time is event time with an injected sweep clock: nothing sleeps for hours.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startSinkStage } from '../../../src/process/sink-stage.js';
import { ed25519Signer } from '../../../src/engine/ledger/index.js';
import { DEFAULT_TRUST_DEBT_CONFIG, HOUR_MS, decayBetween, MemoryTrustDebtStore, trustDebtConfigFrom, type TrustDebtChange, type TrustDebtEvent } from '../../../src/engine/trust-debt/index.js';
import type { Intervention } from '../../../src/engine/types.js';
import { Collector, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, services, uniqueIdent, waitFor, withRedis } from '../setup/helpers.js';

// the audit is opt-in: configured explicitly (the §10.1 example, threshold_hours 168, credit −0.20)
const cfg = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 168, credit: -0.2 } } });
const T0 = Date.parse('2026-04-01T00:00:00Z');
const WINDOW = 168 * HOUR_MS;

describe('audit sweep: concurrent sweepers (real Redis)', () => {
  it('four instances sweeping at once, racing lazy applies, credit each agent\'s window exactly once', async () => {
    await withRedis(async (redis, prefix) => {
      const conns = [redis, redisClient(), redisClient(), redisClient()];
      try {
        const stores = conns.map((c) => new RedisTrustDebtStore(c, { prefix }));
        const expected = new MemoryTrustDebtStore();
        const AGENTS = 120;
        const seed: TrustDebtEvent[] = [];
        for (let i = 0; i < AGENTS; i++) {
          const agentId = `ag-${i}`;
          // debt from a non-ok intervention, then only ok traces: the window runs from the last non-ok one
          seed.push({ eventId: `${agentId}-0`, tenant: 'acme', agentId, atMs: T0 + i * 1000, kind: 'intervention', intervention: (['block', 'halt', 'flag'] as Intervention[])[i % 3] });
          seed.push({ eventId: `${agentId}-1`, tenant: 'acme', agentId, atMs: T0 + i * 1000 + 10 * HOUR_MS, kind: 'intervention', intervention: 'ok' });
        }
        for (const ev of seed) {
          await stores[0]!.apply(ev, cfg);
          await expected.apply(ev, cfg);
        }
        const sweepAt = T0 + WINDOW + 200 * 1000; // every agent's first window is due, none's second
        // Later ok events of half the agents race the sweeps (lazy path) on other connections.
        const late: TrustDebtEvent[] = [];
        for (let i = 0; i < AGENTS; i += 2) late.push({ eventId: `ag-${i}-2`, tenant: 'acme', agentId: `ag-${i}`, atMs: sweepAt + 5000, kind: 'intervention', intervention: 'ok' });

        const results = await Promise.all([
          ...stores.flatMap((s) => [s.sweep(sweepAt, () => cfg), s.sweep(sweepAt, () => cfg)]),
          Promise.all(late.map((ev, k) => stores[k % stores.length]!.apply(ev, cfg))),
        ]);
        const swept = results.slice(0, -1).flat() as TrustDebtChange[];
        const lazy = (results[results.length - 1] as TrustDebtChange[]).flatMap((c) => c.audits ?? []);
        const all = [...swept, ...lazy];
        const ids = all.map((c) => c.eventId);
        expect(new Set(ids).size).toBe(ids.length); // nobody granted a window someone else granted
        expect(ids.sort()).toEqual(Array.from({ length: AGENTS }, (_, i) => `audit:acme:ag-${i}:${T0 + i * 1000 + WINDOW}`).sort());
        expect(all.every((c) => c.cause === 'good_behavior_audit' && c.after < c.before)).toBe(true);

        // The same events applied single-threaded give bit-identical debt.
        await expected.sweep(sweepAt, () => cfg);
        for (const ev of late) await expected.apply(ev, cfg);
        const at = sweepAt + HOUR_MS;
        for (let i = 0; i < AGENTS; i++) {
          expect((await stores[1]!.current('acme', `ag-${i}`, at, cfg)).debt).toBe((await expected.current('acme', `ag-${i}`, at, cfg)).debt);
        }
        // Only sweeps write the outbox: one entry per credit a sweep granted, none for the lazy ones.
        expect(await stores[0]!.auditOutboxLength()).toBe(swept.length);
        // Sweeping again (any instance, any number of times) grants nothing more.
        expect((await Promise.all(stores.map((s) => s.sweep(sweepAt + HOUR_MS, () => cfg)))).flat()).toEqual([]);
        // Agents whose blueprint configures no audit are never credited, however long they behave.
        expect(await stores[0]!.sweep(sweepAt + 10 * WINDOW, () => DEFAULT_TRUST_DEBT_CONFIG)).toEqual([]);
      } finally {
        for (const c of conns.slice(1)) await c.quit().catch(() => c.disconnect());
      }
    });
  });
});

describe('audit sweep in the trust-debt stage (real Redis + Kafka + ClickHouse)', () => {
  it('credits an agent with only ok traces for threshold_hours once, publishes it, and the sink stores it', async () => {
    await withPipelineEnv(
      'td-sweep',
      async ({ cfg: scfg, topics, adapter, prefix }) => {
        const redis = redisClient();
        const database = uniqueIdent('steward_it_tdsweep');
        const ch = new ClickHouseStore({ url: services().clickhouseUrl, database });
        const store = new RedisTrustDebtStore(redis, { prefix: `${prefix}:` });
        let clock = T0; // the sweep's clock (wall time of the sweeping instance)
        const seenCfg: string[] = [];
        const pipe = await startPipeline(
          scfg,
          ['trust-debt', 'sink'],
          {
            trustDebtStore: store,
            trustDebtConfigFor: () => cfg,
            tenantOf: () => 'acme',
            trustDebtSweepStore: store,
            trustDebtConfigForAgent: (tenant, agentId) => (seenCfg.push(`${tenant}/${agentId}`), cfg),
            sweepNow: () => clock,
            startSink: () =>
              startSinkStage({
                kafka: scfg.kafka,
                topicPrefix: scfg.topics.prefix,
                groupId: `${prefix}-sink`,
                clickhouse: { url: services().clickhouseUrl, database, requestTimeoutMs: 5000 },
                signer: ed25519Signer(generateKeyPairSync('ed25519').privateKey),
                logger: quietLogger(),
                maxRows: 100,
                maxDelayMs: 50,
                autoCommitIntervalMs: 200,
              }),
          },
          { logger: quietLogger() },
        );
        const out = await new Collector(adapter, [topics.trustDebt]).start();
        const producer = await adapter.producer();
        const verdict = (n: number, agent: string, intervention: Intervention, atMs: number) => ({
          key: agent,
          value: JSON.stringify({ trace_id: `${agent}-${n}`, agent_id: agent, tenant: 'acme', blueprint: 'x@1.0', intervention, event_time_ms: atMs }),
        });
        try {
          expect(pipe.auditSweep).toBeDefined(); // steward.yaml default: the sweep runs with the stage
          // good: a halt (0.5), then only ok traces for more than threshold_hours; bad: a flag inside the window.
          await producer.send([
            {
              topic: topics.verdicts,
              messages: [
                verdict(0, 'good', 'halt', T0),
                verdict(1, 'good', 'ok', T0 + 20 * HOUR_MS),
                verdict(2, 'good', 'ok', T0 + 100 * HOUR_MS),
                verdict(0, 'bad', 'block', T0),
                verdict(1, 'bad', 'flag', T0 + 100 * HOUR_MS),
              ],
            },
          ]);
          await waitFor(() => out.byId(topics.trustDebt, 'event_id').size === 5, { timeoutMs: 20_000, message: 'debt changes of the verdicts' });
          const stored = (await store.state('acme', 'good'))!;
          const debtBefore = decayBetween(stored.debt, stored.lastMs, T0 + WINDOW, cfg); // at the window's end, before the credit

          // The window ended at T0+168h, but with the default 1 h lag the sweep at T0+168h+30min must not credit yet.
          clock = T0 + WINDOW + 30 * 60_000;
          expect(await pipe.auditSweep!.runOnce()).toEqual([]);
          clock = T0 + WINDOW + HOUR_MS + 60_000;
          // Upstream backlogs hold the sweep back too: a scoring message stamped inside the window that the
          // scorer group (started: it has committed before) has not turned into a verdict yet.
          let granted: TrustDebtChange[] = [];
          const kadmin = new Kafka({ brokers: scfg.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
          await kadmin.connect();
          try {
            const stamped = String(T0 + 150 * HOUR_MS);
            await producer.send([
              { topic: topics.scoring, messages: [{ key: 'bad', value: '{}', partition: 0, timestamp: stamped }] },
            ]);
            const scorerGroup = `${scfg.consumer.groupPrefix}-scorer`;
            const commitScorer = (offset: string) => kadmin.setOffsets({ groupId: scorerGroup, topic: topics.scoring, partitions: [{ partition: 0, offset }] });
            await commitScorer('0');
            expect(await pipe.auditSweep!.runOnce()).toEqual([]);
            expect(await store.auditOutboxLength()).toBe(0);
            await commitScorer('1'); // the scorer caught up
            granted = await pipe.auditSweep!.runOnce();
          } finally {
            await kadmin.deleteGroups([`${scfg.consumer.groupPrefix}-scorer`]).catch(() => undefined);
            await kadmin.disconnect();
          }
          const auditId = `audit:acme:good:${T0 + WINDOW}`;
          expect(granted.map((c) => c.eventId)).toEqual([auditId]);
          expect(granted[0]!.before).toBe(debtBefore);
          expect(debtBefore).toBeGreaterThan(0.3);
          expect(granted[0]!.after).toBeCloseTo(debtBefore - 0.2, 12);
          expect(seenCfg).toEqual(expect.arrayContaining(['acme/good', 'acme/bad']));

          const audit = await waitFor(() => out.json(topics.trustDebt).find((m) => m.event_id === auditId), { timeoutMs: 20_000, message: 'audit credit on acgp.trust-debt' });
          const other = out.json(topics.trustDebt).find((m) => m.event_id === 'good-0');
          // same message shape as any debt change, except `trace_id`, which only a trace's own change carries (095f884)
          expect(Object.keys(audit).sort()).toEqual(Object.keys(other).filter((k) => k !== 'trace_id').sort());
          expect(audit.trace_id).toBeUndefined();
          expect(audit).toMatchObject({ agent_id: 'good', tenant: 'acme', cause: 'good_behavior_audit', at_ms: T0 + WINDOW, duplicate: false, before: debtBefore });

          // No second credit: not by another sweep, not by the lazy path at the agent's next event.
          expect(await pipe.auditSweep!.runOnce()).toEqual([]);
          await producer.send([{ topic: topics.verdicts, messages: [verdict(3, 'good', 'ok', T0 + WINDOW + 2 * HOUR_MS)] }]);
          const next = await waitFor(() => out.json(topics.trustDebt).find((m) => m.event_id === 'good-3'), { timeoutMs: 20_000, message: 'next ok trace' });
          expect(next.before).toBeLessThan(audit.after); // decayed from the credited value, credit not repeated
          // At T0+336h−1h good's second window (ends T0+336h) is not due; bad's window, restarted by its flag
          // at T0+100h, ended at T0+268h: only bad is credited.
          clock = T0 + 2 * WINDOW;
          const badAudit = `audit:acme:bad:${T0 + 100 * HOUR_MS + WINDOW}`;
          expect((await pipe.auditSweep!.runOnce()).map((c) => c.eventId)).toEqual([badAudit]);
          await waitFor(() => out.json(topics.trustDebt).some((m) => m.event_id === badAudit), { timeoutMs: 20_000, message: 'bad audit credit' });
          expect(await store.auditOutboxLength()).toBe(0); // published, then removed
          const audits = out.json(topics.trustDebt).filter((m) => m.cause === 'good_behavior_audit');
          expect(audits.map((m) => m.event_id).sort()).toEqual([auditId, badAudit].sort());

          // The sink lands the credit in ClickHouse like any other trust-debt event.
          const rows = await waitFor(
            async () => {
              const r = await ch.query<{ event_id: string; cause: string; after: number }>(
                `SELECT event_id, cause, after FROM ${ch.table('v_trust_debt_events')} WHERE agent_id = 'good' AND cause = 'good_behavior_audit'`,
              );
              return r.length > 0 ? r : undefined;
            },
            { timeoutMs: 30_000, message: 'audit credit in ClickHouse' },
          );
          expect(rows).toHaveLength(1);
          expect(rows[0]).toMatchObject({ event_id: auditId, cause: 'good_behavior_audit' });
          expect(Number(rows[0]!.after)).toBeCloseTo(audit.after, 12);
        } finally {
          await producer.disconnect();
          await out.stop();
          await pipe.stop();
          await ch.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
          await ch.close();
          const keys = await redis.keys(`${prefix}:*`);
          if (keys.length) await redis.del(...keys);
          await redis.quit();
        }
      },
      { trust_debt: { audit_sweep_interval_ms: 3_600_000 } },
    );
  });
});

describe('reviews while the pipeline is behind (real Redis + Kafka)', () => {
  it('a review arriving ahead of a backlogged block credits no audit window; the block then restarts the window', async () => {
    const daily = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 24, credit: -0.1 } } });
    await withPipelineEnv('td-review-behind', async ({ cfg: scfg, topics, adapter, prefix }) => {
      const redis = redisClient();
      const store = new RedisTrustDebtStore(redis, { prefix: `${prefix}:` });
      const clock = T0 + 30 * HOUR_MS; // wall clock of the stage: the review is stamped now
      const pipe = await startPipeline(scfg, ['trust-debt'], { trustDebtStore: store, trustDebtConfigFor: () => daily, tenantOf: () => 'acme', sweepNow: () => clock }, { logger: quietLogger() });
      const out = await new Collector(adapter, [topics.trustDebt]).start();
      const producer = await adapter.producer();
      const kadmin = new Kafka({ brokers: scfg.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
      await kadmin.connect();
      const scorerGroup = `${scfg.consumer.groupPrefix}-scorer`;
      const verdict = (n: number, intervention: Intervention, atMs: number) => ({
        key: 'rb',
        value: JSON.stringify({ trace_id: `rb-${n}`, agent_id: 'rb', tenant: 'acme', blueprint: 'x@1.0', intervention, event_time_ms: atMs }),
      });
      try {
        await producer.send([{ topic: topics.verdicts, messages: [verdict(0, 'halt', T0)] }]);
        await waitFor(() => out.byId(topics.trustDebt, 'event_id').has('rb-0'), { timeoutMs: 20_000, message: 'halt applied' });
        // The scorer has yet to turn a trace from T0+20h into its verdict (a block).
        await producer.send([{ topic: topics.scoring, messages: [{ key: 'rb', value: '{}', partition: 0, timestamp: String(T0 + 20 * HOUR_MS) }] }]);
        await kadmin.setOffsets({ groupId: scorerGroup, topic: topics.scoring, partitions: [{ partition: 0, offset: '0' }] });
        await producer.send([{ topic: topics.reviews, messages: [{ key: 'rb', value: JSON.stringify({ event_id: 'rb-review', agent_id: 'rb', tenant: 'acme', kind: 'review_approved', timestamp: clock }) }] }]);
        const review = await waitFor(() => out.byId(topics.trustDebt, 'event_id').get('rb-review'), { timeoutMs: 20_000, message: 'review applied' });
        // The block arrives (the scorer caught up), then an ok trace later that day.
        await kadmin.setOffsets({ groupId: scorerGroup, topic: topics.scoring, partitions: [{ partition: 0, offset: '1' }] }).catch(() => undefined);
        await producer.send([{ topic: topics.verdicts, messages: [verdict(1, 'block', T0 + 20 * HOUR_MS), verdict(2, 'ok', T0 + 40 * HOUR_MS)] }]);
        await waitFor(() => out.byId(topics.trustDebt, 'event_id').has('rb-2'), { timeoutMs: 20_000, message: 'block and ok applied' });
        // In event-time order the block at T0+20h restarts the window before it ends: no credit is ever due
        // by T0+40h. Before this change the review credited [T0, T0+24h] at once.
        expect(out.json(topics.trustDebt).filter((m) => m.cause === 'good_behavior_audit')).toEqual([]);
        expect(review.before).toBeCloseTo(0.5 * 0.95 ** (30 / 24), 12);
        const expected = new MemoryTrustDebtStore();
        for (const ev of [
          { eventId: 'rb-0', atMs: T0, intervention: 'halt' as Intervention },
          { eventId: 'rb-1', atMs: T0 + 20 * HOUR_MS, intervention: 'block' as Intervention },
        ]) await expected.apply({ ...ev, tenant: 'acme', agentId: 'rb', kind: 'intervention' }, daily);
        await expected.apply({ eventId: 'rb-review', tenant: 'acme', agentId: 'rb', atMs: clock, kind: 'review_approved' }, daily);
        const inOrder = (await expected.apply({ eventId: 'rb-2', tenant: 'acme', agentId: 'rb', atMs: T0 + 40 * HOUR_MS, kind: 'intervention', intervention: 'ok' }, daily)).after;
        // the only difference left to event-time order: the block was applied after the review's decay step
        expect(out.byId(topics.trustDebt, 'event_id').get('rb-2').after).toBeCloseTo(inOrder, 2);
      } finally {
        await kadmin.deleteGroups([scorerGroup]).catch(() => undefined);
        await kadmin.disconnect();
        await producer.disconnect();
        await out.stop();
        await pipe.stop();
        await deleteRedisPrefix(redis, `${prefix}:`);
        await redis.quit();
      }
    });
  }, 60_000);
});
