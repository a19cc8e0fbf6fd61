// The dashboard end to end: ClickHouse filled by a real pipeline run (the demo's sample agents through the
// tripwire, scorer, trust-debt and sink stages on real Kafka), the page loaded in real headless Chromium, every
// panel's numbers compared with SQL written here against the views, a drill-down from a chart point to its
// traces and one trace's story (ledger entry verified with the run's key), and screenshots saved.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'puppeteer-core';
import { runDemo, type DemoResult } from '../../../src/demo/run-demo.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { runReport } from '../../../src/adapters/clickhouse/reports.js';
import { READ_ONLY_SETTINGS, ReadOnlyClickHouseStore } from '../../../src/adapters/dashboard/read-only-store.js';
import { DashboardServer } from '../../../src/adapters/dashboard/server.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { keyId } from '../../../src/engine/ledger/index.js';
import { quietLogger, pipelineConfig } from '../pipeline/harness.js';
import { deleteRedisPrefix, services, uniqueIdent, uniqueName, uniqueRedisPrefix } from '../setup/helpers.js';
import { SHOTS, launchChromium } from './browser.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('steward dashboard in headless Chromium over a real pipeline run', () => {
  const database = uniqueIdent('steward_dash');
  const redisPrefix = uniqueRedisPrefix('dash');
  let demo: DemoResult;
  let admin: ClickHouseStore;
  let ro: ReadOnlyClickHouseStore;
  let server: DashboardServer;
  let base: string;
  let browser: Browser;
  let page: Page;
  let redis: Redis;
  let publicKey: KeyObject;
  let range: { from: number; to: number };
  const n = async (sql: string) => Number((await admin.query<{ n: string }>(sql))[0]?.n ?? 0);

  beforeAll(async () => {
    const keys = generateKeyPairSync('ed25519');
    publicKey = keys.publicKey;
    const cfg0 = pipelineConfig(uniqueName('dash'), {
      redis: { url: services().redisUrl, key_prefix: redisPrefix },
      signing: { key: keys.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() },
    });
    const cfg = {
      ...cfg0,
      blueprints: { dir: `${ROOT}blueprints`, agents: `${ROOT}blueprints/agents.yaml`, watch: false },
      clickhouse: { ...cfg0.clickhouse, url: services().clickhouseUrl, database },
    };
    const out = new Writable({ write: (_c, _e, cb) => cb() });
    demo = await runDemo(cfg, { durationMs: 6000, rate: 3, withSink: true, keepTopics: false, seed: 11, out, summaryEveryMs: 60_000 }, quietLogger());
    admin = new ClickHouseStore({ url: services().clickhouseUrl, database });
    ro = new ReadOnlyClickHouseStore({ url: services().clickhouseUrl, database });
    redis = new Redis(services().redisUrl);
    // The demo's stages ran under `<prefix><runId>:` (run-demo.ts); the re-tiering queue is read there.
    const debtStore = new RedisTrustDebtStore(redis, { prefix: `${redisPrefix}${demo.runId}:`, dedupTtlSeconds: 3600 });
    server = new DashboardServer({ store: ro, ledgerKeys: new Map([[keyId(publicKey), publicKey]]), retierQueue: () => debtStore.retierQueue(1000), refreshMs: 60_000 });
    base = `http://127.0.0.1:${await server.listen()}`;
    const [x] = await admin.query<{ lo: string; hi: string }>(`SELECT min(event_time_ms) AS lo, max(event_time_ms) AS hi FROM ${database}.decisions`);
    range = { from: Number(x!.lo), to: Number(x!.hi) + 1 };
    browser = await launchChromium();
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
  }, 180_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await server?.close().catch(() => undefined);
    await ro?.close().catch(() => undefined);
    await admin?.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await admin?.close().catch(() => undefined);
    if (redis) {
      await deleteRedisPrefix(redis, redisPrefix);
      redis.disconnect();
    }
  });

  /** A panel's `data-key` → `data-value` pairs (series totals, histogram bars). */
  const pairs = (id: string): Promise<Record<string, number>> =>
    page.$$eval(`[data-panel="${id}"] tr[data-key]`, (trs) => Object.fromEntries(trs.map((tr) => [tr.getAttribute('data-key'), Number(tr.querySelector('[data-value]')!.getAttribute('data-value'))])));
  /** A table panel's rows as column → text. */
  const tableRows = (id: string): Promise<Record<string, string | null>[]> =>
    page.$$eval(`[data-panel="${id}"] table.rows tbody tr`, (trs) => trs.map((tr) => Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [td.getAttribute('data-col'), td.textContent]))));
  const inRange = (col: string) => `${col} >= ${range.from} AND ${col} <= ${range.to}`;

  it('shows the numbers the views give, for every panel', async () => {
    expect(demo.clickhouse!.decisions).toBeGreaterThan(20);
    await page.goto(`${base}/?from=${range.from}&to=${range.to}`);
    await page.waitForSelector('body[data-loaded]', { timeout: 30_000 });
    expect(await page.$eval('body', (b) => b.getAttribute('data-error'))).toBeNull();
    await page.screenshot({ path: `${SHOTS}overview.png`, fullPage: true });

    const bySql = async (col: string) =>
      Object.fromEntries(
        (await admin.query<{ k: string; n: string }>(`SELECT ${col} AS k, count() AS n FROM ${database}.v_outcomes WHERE ${inRange('event_time_ms')} AND final_intervention != 'ok' GROUP BY k`)).map((r) => [r.k, Number(r.n)]),
      );
    const types = await bySql('final_intervention');
    expect(Object.keys(types).length).toBeGreaterThan(0);
    expect(await pairs('interventions-type')).toEqual(types);
    expect(await pairs('interventions-blueprint')).toEqual(await bySql('blueprint'));
    expect(await pairs('interventions-agent')).toEqual(await bySql('agent_id'));
    const decisions = await n(`SELECT count() AS n FROM ${database}.v_decisions WHERE ${inRange('event_time_ms')}`);
    expect(await pairs('traces')).toEqual({ traces: decisions });

    // Histograms: every decision in one latency bar, every scored verdict in one CTQ bar, bar by bar.
    expect(Object.values(await pairs('decision-latency')).reduce((a, b) => a + b, 0)).toBe(decisions);
    const ctq = await admin.query<{ b: string; n: string }>(`SELECT toUInt32(least(19, floor(assumeNotNull(ctq) * 20))) AS b, count() AS n FROM ${database}.v_verdicts WHERE ${inRange('event_time_ms')} AND ctq IS NOT NULL GROUP BY b`);
    const ctqBars = Object.values(await pairs('ctq'));
    expect(ctqBars).toHaveLength(20);
    for (let i = 0; i < 20; i++) expect(ctqBars[i]).toBe(Number(ctq.find((r) => Number(r.b) === i)?.n ?? 0));
    const verdictPairs = await n(`SELECT count() AS n FROM ${database}.v_verdicts WHERE ${inRange('event_time_ms')} AND trace_id IN (SELECT trace_id FROM ${database}.v_decisions)`);
    expect(Object.values(await pairs('verdict-latency')).reduce((a, b) => a + b, 0)).toBe(verdictPairs);

    // Top violations: fired tripwires and failed rules of the decisions, violated metrics of the verdicts.
    const violations = await admin.query<{ kind: string; id: string; times: string }>(
      `SELECT kind, id, count() AS times FROM (
         SELECT 'tripwire' AS kind, arrayJoin(tripwires_fired) AS id FROM ${database}.v_decisions WHERE event_time_ms >= ${range.from}
         UNION ALL SELECT 'rule' AS kind, arrayJoin(rules_failed) AS id FROM ${database}.v_decisions WHERE event_time_ms >= ${range.from}
         UNION ALL SELECT 'metric' AS kind, arrayJoin(policy_violations) AS id FROM ${database}.v_verdicts WHERE event_time_ms >= ${range.from})
       GROUP BY kind, id ORDER BY times DESC, kind, id`,
    );
    const shown = await tableRows('top-violations');
    expect(shown.map((r) => `${r.kind}|${r.id}|${r.times}`).sort()).toEqual(violations.slice(0, 15).map((r) => `${r.kind}|${r.id}|${r.times}`).sort());

    // Latency percentiles per stage: the numbers `steward report latency` prints.
    const perStage = await runReport(admin, 'latency', { sinceMs: range.from });
    expect((await tableRows('latency-percentiles')).map((r) => [r.stage, Number(r.decisions), Number(r.p50), Number(r.p95), Number(r.p99), Number(r.max)])).toEqual(
      perStage.map((r) => [r.stage, Number(r.decisions), Number(r.p50), Number(r.p95), Number(r.p99), Number(r.max)]),
    );

    // Trust debt: each agent's peak of the per-bucket last value (bucket from the page's range).
    const bucket = await page.evaluate(() => (globalThis as unknown as { __dash: { charts: Record<string, { xs: number[] }> } }).__dash.charts['traces']!.xs);
    const bucketMs = bucket.length > 1 ? bucket[1]! - bucket[0]! : 60_000;
    const peaks = await admin.query<{ k: string; p: number }>(
      `SELECT k, max(d) AS p FROM (SELECT agent_id AS k, intDiv(ts_ms, ${bucketMs}) AS b, round(argMax(after, ts_ms), 4) AS d FROM ${database}.v_trust_debt_events WHERE ${inRange('ts_ms')} GROUP BY k, b) GROUP BY k`,
    );
    expect(peaks.length).toBeGreaterThan(0);
    expect(await pairs('trust-debt')).toEqual(Object.fromEntries(peaks.map((r) => [r.k, Number(r.p)])));

    // DLQ: the demo's malformed ACM plan is dead-lettered.
    const dlq = await admin.query<{ k: string; n: string }>(`SELECT code AS k, count() AS n FROM ${database}.v_dlq_events WHERE ${inRange('failed_at_ms')} GROUP BY k`);
    expect(await pairs('dlq-volume')).toEqual(Object.fromEntries(dlq.map((r) => [r.k, Number(r.n)])));

    // Restricted agents and the re-tiering queue (Redis).
    const restricted = await admin.query<{ agent_id: string; level: string }>(
      `SELECT agent_id, argMax(level, ts_ms) AS level FROM ${database}.v_trust_debt_events GROUP BY agent_id HAVING level IN ('restricted_mode', 're_tiering_review')`,
    );
    expect((await tableRows('restricted-agents')).map((r) => `${r.agent_id}|${r.level}`).sort()).toEqual(restricted.map((r) => `${r.agent_id}|${r.level}`).sort());
    const queue = await new RedisTrustDebtStore(redis, { prefix: `${redisPrefix}${demo.runId}:`, dedupTtlSeconds: 3600 }).retierQueue(1000);
    expect((await tableRows('retier-queue')).map((r) => r.agent_id).sort()).toEqual(queue.map((q) => q.agentId).sort());

    // The gate's panels read the gate views; this run has no final answers, so they are empty like the views.
    const gateRows = await n(`SELECT count() AS n FROM ${database}.v_gate_judge_results`);
    expect(gateRows).toBe(0);
    for (const id of ['gate-verdict-rate', 'gate-reason-codes', 'gate-far-away', 'gate-replan-effectiveness', 'gate-fix-modes', 'gate-cost', 'gate-alerts'])
      expect(await page.$eval(`[data-panel="${id}"]`, (s) => s.getAttribute('data-rows'))).toBe('0');
    // The review queue table (issue #26) is shown when the database has it, else the panel says why it is empty.
    const hasQueue = await n(`SELECT count() AS n FROM system.tables WHERE database = '${database}' AND name = 'review_queue'`);
    const note = await page.$eval('[data-panel="review-queue"]', (s) => s.getAttribute('data-note'));
    if (hasQueue === 0) expect(note).toMatch(/no review_queue table/);
    else {
      expect(note).toBeNull();
      const open = await n(`SELECT count() AS n FROM ${database}.review_queue FINAL WHERE status != 'resolved'`);
      expect(await page.$eval('[data-panel="review-queue"]', (s) => Number(s.getAttribute('data-rows')))).toBe(Math.min(100, open));
    }
  }, 90_000);

  it('drills down from a chart point to its traces and to one trace with its verified ledger entry', async () => {
    // The biggest point of the interventions-by-type chart, where that key alone is the largest value.
    const target = await page.evaluate(() => {
      const c = (globalThis as unknown as { __dash: { charts: Record<string, { u: any; keys: string[]; xs: number[] }> } }).__dash.charts['interventions-type']!;
      let best = { s: 0, i: 0, v: -1 };
      for (let s = 1; s <= c.keys.length; s++) for (let i = 0; i < c.xs.length; i++) if ((c.u.data[s][i] ?? 0) > best.v) best = { s, i, v: c.u.data[s][i] };
      const rect = c.u.over.getBoundingClientRect();
      return { key: c.keys[best.s - 1]!, t: c.xs[best.i]!, v: best.v, x: rect.left + c.u.valToPos(c.u.data[0][best.i], 'x'), y: rect.top + c.u.valToPos(best.v, 'y') };
    });
    expect(target.v).toBeGreaterThan(0);
    await page.mouse.move(target.x, target.y);
    await page.mouse.click(target.x, target.y);
    await page.waitForSelector('#drill[data-rendered="drill"]', { timeout: 15_000 });
    const drill = await page.$eval('#drill', (s) => ({ key: s.getAttribute('data-key'), t: Number(s.getAttribute('data-t')), dim: s.getAttribute('data-dim') }));
    expect(drill.dim).toBe('type');
    expect(drill.t).toBe(target.t);
    const bucketMs = await page.evaluate(() => {
      const xs = (globalThis as unknown as { __dash: { charts: Record<string, { xs: number[] }> } }).__dash.charts['interventions-type']!.xs;
      return xs[1]! - xs[0]!;
    });
    const expected = await admin.query<{ trace_id: string }>(
      `SELECT trace_id FROM ${database}.v_outcomes WHERE final_intervention = '${drill.key}' AND event_time_ms >= ${drill.t} AND event_time_ms < ${drill.t + bucketMs} AND ${inRange('event_time_ms')} ORDER BY event_time_ms, trace_id`,
    );
    const listed = await page.$$eval('#drill tr[data-trace]', (trs) => trs.map((tr) => tr.getAttribute('data-trace')));
    expect(listed).toEqual(expected.map((r) => r.trace_id));
    if (drill.key === target.key) expect(listed.length).toBe(target.v);
    await page.screenshot({ path: `${SHOTS}drill-down.png`, fullPage: true });

    await page.click(`#drill a[data-trace="${listed[0]}"]`);
    await page.waitForSelector('#story[data-rendered="story"]', { timeout: 15_000 });
    const [decision] = await admin.query<{ intervention: string; agent_id: string }>(`SELECT intervention, agent_id FROM ${database}.v_decisions WHERE trace_id = '${listed[0]}'`);
    const field = (name: string) => page.$eval(`#story tr[data-field="${name}"] td`, (td) => td.textContent);
    expect(await field('intervention')).toBe(decision!.intervention);
    expect(await field('agent_id')).toBe(decision!.agent_id);
    expect(await field('entry_id')).toMatch(new RegExp(`^pd:${listed[0]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    expect(await field('type')).toBe('POLICY_DECISION');
    expect(await page.$eval('#story [data-ledger-status]', (b) => b.getAttribute('data-ledger-status'))).toBe('verified');
    await page.screenshot({ path: `${SHOTS}trace-story.png`, fullPage: true });
  }, 60_000);

  it('refreshes live: a row landing after the page loaded shows up on the next poll', async () => {
    // Each step is named so a slow CI machine fails with the step that hung, not only vitest's timeout.
    let step = 'start';
    const at = async <T>(name: string, p: Promise<T>): Promise<T> => {
      step = name;
      return p;
    };
    const live = new DashboardServer({ store: ro, refreshMs: 1000 });
    const port = await at('listen', live.listen());
    const p2 = await at('newPage', browser.newPage());
    try {
      await at('goto', p2.goto(`http://127.0.0.1:${port}/?from=${range.from}&to=${range.to}`, { timeout: 20_000 }));
      await at('first render', p2.waitForSelector('body[data-loaded]', { timeout: 20_000 }));
      const before = await p2.$eval('[data-panel="dlq-reasons"]', (s) => Number(s.getAttribute('data-rows')));
      const gen = await p2.$eval('body', (b) => Number(b.getAttribute('data-loaded')));
      await at(
        'insert',
        admin.insert('dlq_events', [
          { dlq_topic: 'acgp.dlq', dlq_partition: 0, dlq_offset: 1, source_topic: 'live-test', source_partition: 0, source_offset: '1', source_ts_ms: range.from, stage: 'tripwire', code: 'STEWARD_LIVE_TEST', message: 'x', failed_at_ms: range.from, key: 'k', value_bytes: 1, ingested_at_ms: 1 },
        ]),
      );
      // The page polls on its own (no reload): wait for a later render that has the row. Polling by interval,
      // not animation frames, so the wait does not depend on the page being painted.
      // (Expressions as text: the test compiles without the DOM library.)
      await at('later render', p2.waitForFunction(`Number(document.body.getAttribute('data-loaded')) > ${gen}`, { timeout: 20_000, polling: 100 }));
      await at(
        'row shown',
        p2.waitForFunction(`[...document.querySelectorAll('[data-panel="dlq-reasons"] td[data-col="code"]')].some((td) => td.textContent === 'STEWARD_LIVE_TEST')`, { timeout: 20_000, polling: 100 }),
      );
      expect(await p2.$eval('[data-panel="dlq-reasons"]', (s) => Number(s.getAttribute('data-rows')))).toBe(before + 1);
    } catch (e) {
      throw new Error(`live refresh failed at step '${step}': ${(e as Error).message}`);
    } finally {
      await p2.close().catch(() => undefined);
      await live.close();
    }
  }, 150_000);

  it("refuses writes through the dashboard's ClickHouse client (readonly=1 on the server)", async () => {
    const before = await n(`SELECT count() AS n FROM ${database}.decisions`);
    // An INSERT sent with the dashboard's settings on its client (query() would append a FORMAT clause to it).
    await expect(ro.client.exec({ query: `INSERT INTO ${database}.decisions (trace_id, agent_id, tenant) SELECT 'x', 'y', 'z'`, clickhouse_settings: { ...READ_ONLY_SETTINGS } })).rejects.toThrow(
      /Code: 164|readonly/,
    );
    const attempts = [
      `CREATE TABLE ${database}.dash_probe (a UInt8) ENGINE = Memory`,
      `DROP TABLE ${database}.decisions`,
      `SELECT 1 SETTINGS readonly = 0`,
    ];
    for (const sql of attempts) await expect(ro.query(sql)).rejects.toThrow(/Code: 164.*readonly mode/);
    await expect(ro.command(`DROP TABLE ${database}.decisions`)).rejects.toThrow(/read-only/);
    await expect(ro.insert('decisions', [{ trace_id: 'x' }])).rejects.toThrow(/read-only/);
    expect(await n(`SELECT count() AS n FROM ${database}.decisions`)).toBe(before);
    expect(await n(`SELECT count() AS n FROM system.tables WHERE database = '${database}' AND name = 'dash_probe'`)).toBe(0);
    // The API refuses a malformed parameter before any SQL (400), and an injection attempt in a key stays a literal.
    const bad = await fetch(`${base}/api/panels?from=1%20OR%201=1`);
    expect(bad.status).toBe(400);
    const inj = await fetch(`${base}/api/points?dim=type&key=${encodeURIComponent("block' OR 1=1 --")}&t=${range.from}&from=${range.from}&to=${range.to}`);
    expect(inj.status).toBe(200);
    expect(((await inj.json()) as { traces: unknown[] }).traces).toEqual([]);
  });
});
