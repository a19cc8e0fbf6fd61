/**
 * Dashboard page-load benchmark (bounded, one run) on the real ClickHouse of scripts/services.sh: a fresh
 * database with BENCH_DASHBOARD_ROWS decisions (default 1 000 000, written with INSERT … SELECT FROM numbers()),
 * verdicts for 40 % of them, 20 000 trust-debt changes and 1 000 dead letters, spread over 7 days; then the
 * dashboard served as `steward dashboard` serves it (read-only client) and loaded in headless Chromium over the
 * whole 7 days, timed from navigation until every panel is rendered (body[data-loaded]). Baseline in the same
 * run: the same page on an empty database (page, API and browser cost without data). Also printed: the last 24 h
 * of the 7 days (`dashboard_load_24h_ms=`, the page's default range).
 * One unmeasured warm-up load each, then 3 loads, median. Prints `dashboard_load_ms=` last, the goal is ≤ 2000.
 * These loads run with the server's panel cache off (every load reads the raw rows: the first load of a range
 * after new data). Then the same with the cache on (`dashboard_load_cached_ms=`: a reload, a second viewer or a
 * poll over unchanged data; the warm-up load fills it) — docs/dashboard.md "Performance".
 */
import puppeteer, { type Browser } from 'puppeteer-core';
import { ClickHouseStore } from '../../src/adapters/clickhouse/client.js';
import { migrate } from '../../src/adapters/clickhouse/migrations.js';
import { ReadOnlyClickHouseStore } from '../../src/adapters/dashboard/read-only-store.js';
import { DashboardServer } from '../../src/adapters/dashboard/server.js';
import { servicesEnv } from '../sink/services-env.js';

const ROWS = Number(process.env.BENCH_DASHBOARD_ROWS ?? 1_000_000);
const ROUNDS = 3;
const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const SPAN = 7 * 86_400_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function fill(store: ClickHouseStore): Promise<void> {
  const step = Math.max(1, Math.floor(SPAN / ROWS));
  const kinds = `['ok','ok','ok','ok','ok','nudge','flag','escalate','block','halt']`;
  await store.command(
    `INSERT INTO ${store.table('decisions')} (trace_id, agent_id, tenant, blueprint, intervention, approved, stage, halted, severity, reasons, tripwires_fired, rules_failed,
       tripwires_json, rules_json, latency_ms, event_time_ms, decided_at_ms, hook, tool, session_id, engine_version, fallback, ingested_at_ms) SELECT concat('t-', toString(number)), concat('agent-', toString(number % 200)), 'acme',
       concat('bp-', toString(number % 7), '@1.0'), ${kinds}[number % 10 + 1], number % 10 < 7, if(number % 10 >= 8, 'tripwire', 'none'), number % 10 >= 8, '',
       emptyArrayString(), if(number % 10 = 9, ['dangerous_db_ops'], emptyArrayString()), if(number % 13 = 0, ['refund_amount_cap'], emptyArrayString()), '[]', '[]',
       (number % 97) / 10, ${T0} + number * ${step}, ${T0} + number * ${step} + 5, 'tool_call', 'sql', '', '0.1.0', 0, 0
     FROM numbers(${ROWS})`,
  );
  await store.command(
    `INSERT INTO ${store.table('verdicts')} (trace_id, agent_id, tenant, blueprint, intervention, approved, stage, ctq, risk, confidence, policy_violations,
       metric_names, metric_scores, metric_statuses, metrics_json, verdict_json, signature, event_time_ms, scored_at_ms, ingested_at_ms) SELECT concat('t-', toString(number)), concat('agent-', toString(number % 200)), 'acme', concat('bp-', toString(number % 7), '@1.0'),
       if(number % 20 = 0, 'flag', 'ok'), 1, 'ctq', (number % 100) / 100, (100 - number % 100) / 100, 0.9, if(number % 20 = 0, ['accuracy'], emptyArrayString()),
       ['accuracy'], [toNullable((number % 100) / 100)], ['ok'], '[]', '{}', 'sig', ${T0} + number * ${step}, ${T0} + number * ${step} + 40, 0
     FROM numbers(${ROWS}) WHERE number % 5 < 2`,
  );
  await store.command(
    `INSERT INTO ${store.table('trust_debt_events')} (event_id, tenant, agent_id, ts_ms, cause, before, after, level, previous_level, crossings, trace_id, ingested_at_ms) SELECT concat('e-', toString(number)), 'acme', concat('agent-', toString(number % 200)), ${T0} + number * ${Math.floor(SPAN / 20_000)},
       'intervention', (number % 50) / 50, (number % 50 + 1) / 50, if(number % 50 > 37, 're_tiering_review', if(number % 50 > 25, 'restricted_mode', 'normal')), 'normal', emptyArrayString(), concat('t-', toString(number)), 0
     FROM numbers(20000)`,
  );
  await store.command(
    `INSERT INTO ${store.table('dlq_events')} (dlq_topic, dlq_partition, dlq_offset, source_topic, source_partition, source_offset, source_ts_ms, stage, code, message, failed_at_ms, key, value_bytes, ingested_at_ms) SELECT 'acgp.dlq', 0, number, 'acgp.traces', 0, toString(number), ${T0} + number * 600000, 'tripwire',
       if(number % 3 = 0, 'STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_TOO_LARGE'), 'bench', ${T0} + number * 600000, 'k', 100, 0 FROM numbers(1000)`,
  );
}

async function timeLoads(browser: Browser, base: string, from = T0): Promise<number[]> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  const url = `${base}/?from=${from}&to=${T0 + SPAN}`;
  const times: number[] = [];
  for (let i = 0; i <= ROUNDS; i++) {
    await page.goto('about:blank');
    const t = performance.now();
    await page.goto(url);
    await page.waitForSelector('body[data-loaded]', { timeout: 120_000 });
    const ms = performance.now() - t;
    const err = await page.$eval('body', (b) => b.getAttribute('data-error'));
    if (err) throw new Error(`dashboard error: ${err}`);
    if (i > 0) times.push(ms);
  }
  await page.close();
  return times;
}

async function measure(browser: Browser, database: string, rows: number): Promise<{ all: number[]; day: number[]; cached: number[] }> {
  const admin = new ClickHouseStore({ url: servicesEnv().clickhouse, database, requestTimeoutMs: 600_000 });
  const ro = new ReadOnlyClickHouseStore({ url: servicesEnv().clickhouse, database, requestTimeoutMs: 120_000 });
  const server = new DashboardServer({ store: ro, refreshMs: 600_000, panelCache: false });
  const cachedServer = new DashboardServer({ store: ro, refreshMs: 600_000 });
  try {
    await migrate(admin);
    if (rows > 0) {
      const t = performance.now();
      await fill(admin);
      process.stdout.write(`filled ${database}: ${rows} decisions in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
    }
    const port = await server.listen();
    const base = `http://127.0.0.1:${port}`;
    // All 7 days (the goal's measure), then the last 24 h of them (what the page shows by default).
    const all = await timeLoads(browser, base);
    const day = await timeLoads(browser, base, T0 + SPAN - 86_400_000);
    const cached = await timeLoads(browser, `http://127.0.0.1:${await cachedServer.listen()}`);
    const c = cachedServer.panelCache!;
    if (c.computed !== 1) throw new Error(`the cached loads computed the panels ${c.computed} times (expected once, by the warm-up)`);
    return { all, day, cached };
  } finally {
    await server.close();
    await cachedServer.close();
    await ro.close();
    if (!process.env.BENCH_DASHBOARD_KEEP) await admin.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await admin.close();
  }
}

async function main(): Promise<void> {
  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
  try {
    const id = Date.now().toString(36);
    const empty = await measure(browser, `bench_dash_empty_${id}`, 0);
    const full = await measure(browser, `bench_dash_${id}`, ROWS);
    const ms = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
    process.stdout.write(`empty database loads (ms): ${ms(empty.all)}\n`);
    process.stdout.write(`${ROWS} decisions, 7 days, loads (ms): ${ms(full.all)}; last 24 h of them: ${ms(full.day)}; 7 days from the panel cache: ${ms(full.cached)} (empty: ${ms(empty.cached)})\n`);
    process.stdout.write(`dashboard_empty_load_ms=${median(empty.all).toFixed(0)}\n`);
    process.stdout.write(`dashboard_load_24h_ms=${median(full.day).toFixed(0)}\n`);
    process.stdout.write(`dashboard_load_cached_ms=${median(full.cached).toFixed(0)}\n`);
    process.stdout.write(`dashboard_load_vs_empty=${(median(full.all) / median(empty.all)).toFixed(2)}\n`);
    process.stdout.write(`dashboard_load_ms=${median(full.all).toFixed(0)}\n`);
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
