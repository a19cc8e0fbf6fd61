// The dashboard's HTTP surface without ClickHouse: what the page and its assets are served with, and that a
// refused parameter is answered 400 before any SQL is issued (a recording store stands in for ClickHouse; the
// real server's behaviour is in test/integration/dashboard).
import { afterAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { DashboardServer } from '../../../src/adapters/dashboard/server.js';

class RecordingStore extends ClickHouseStore {
  readonly sql: string[] = [];
  constructor() {
    super({ url: 'http://127.0.0.1:1', database: 'steward_unit' });
  }
  override async query<T>(sql: string): Promise<T[]> {
    this.sql.push(sql);
    return [];
  }
}

describe('dashboard server', () => {
  const store = new RecordingStore();
  const server = new DashboardServer({ store, refreshMs: 5000, now: () => 1_764_000_000_000 });
  afterAll(async () => {
    await server.close();
    await store.close();
  });

  it('serves the page with a same-origin-only Content-Security-Policy and the refresh interval', async () => {
    const r = await server.app.inject({ url: '/' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-security-policy']).toMatch(/default-src 'self'/);
    expect(r.body).toContain('data-refresh-ms="5000"');
    expect(r.body).toContain('src="/assets/uPlot.iife.min.js"');
    expect(r.body).not.toMatch(/https?:\/\//);
  });

  it('serves uPlot from node_modules and the page script', async () => {
    const js = await server.app.inject({ url: '/assets/uPlot.iife.min.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.body).toContain('uPlot');
    expect((await server.app.inject({ url: '/assets/uPlot.min.css' })).body).toContain('.uplot');
    const script = await server.app.inject({ url: '/assets/dashboard.js' });
    expect(script.body).toContain("getJson('/api/panels?'");
  });

  it.each([
    '/api/panels?from=1%20OR%201=1',
    '/api/panels?from=5&to=4',
    '/api/panels?bucket=1234',
    '/api/points?dim=agent_id&key=a&t=0',
    '/api/points?dim=agent&key=&t=0',
    '/api/points?dim=agent&key=a',
    `/api/trace/${'x'.repeat(300)}`,
  ])('answers %s with 400 and issues no SQL', async (url) => {
    const before = store.sql.length;
    const r = await server.app.inject({ url });
    expect(r.statusCode).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({ error: 'STEWARD_USAGE' });
    expect(store.sql.length).toBe(before);
  });

  it('takes a 256-character trace id (the longest the pipeline accepts)', async () => {
    const id = 't'.repeat(256);
    const r = await server.app.inject({ url: `/api/trace/${id}` });
    expect(r.statusCode).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ trace_id: id, decision: null, ledger: { entry: null, verification: { status: 'missing' } } });
  });

  it('puts a drill-down key into SQL only as a quoted literal', async () => {
    const r = await server.app.inject({ url: `/api/points?dim=type&key=${encodeURIComponent("x' OR '1'='1")}&t=1763999000000` });
    expect(r.statusCode).toBe(200);
    const sql = store.sql.at(-1)!;
    expect(sql).toContain("final_intervention = 'x\\' OR \\'1\\'=\\'1'");
    expect(sql).toContain('event_time_ms >= 1763999000000');
  });

  it('answers every panel for a range, the default being the 24 h up to now', async () => {
    const r = await server.app.inject({ url: '/api/panels' });
    expect(r.statusCode).toBe(200);
    const body = JSON.parse(r.body) as { range: { fromMs: number; toMs: number }; panels: { id: string; note?: string }[] };
    expect(body.range).toMatchObject({ fromMs: 1_764_000_000_000 - 86_400_000, toMs: 1_764_000_000_000 });
    expect(body.panels.map((p) => p.id)).toEqual(
      expect.arrayContaining(['interventions-type', 'interventions-blueprint', 'interventions-agent', 'top-violations', 'trust-debt', 'decision-latency', 'verdict-latency', 'ctq',
        'gate-verdict-rate', 'gate-reason-codes', 'gate-far-away', 'gate-replan-effectiveness', 'gate-fix-modes', 'gate-cost', 'gate-alerts', 'review-queue', 'retier-queue', 'dlq-volume']),
    );
    expect(body.panels.find((p) => p.id === 'retier-queue')!.note).toMatch(/no Redis/);
  });

  it('answers an explicit bucket giving more than MAX_BUCKETS over the range with 400 and no SQL (review finding 10)', async () => {
    const before = store.sql.length;
    const r = await server.app.inject({ url: '/api/panels?from=0&to=1764000000000&bucket=60000' });
    expect(r.statusCode).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({ error: 'STEWARD_USAGE', message: expect.stringMatching(/at most 240/) });
    expect(store.sql.length).toBe(before);
  });
});

describe('dashboard Host check (DNS rebinding, review finding 10)', () => {
  const store = new RecordingStore();
  const loopback = new DashboardServer({ store, refreshMs: 5000, now: () => 1_764_000_000_000 });
  const wide = new DashboardServer({ store, host: '0.0.0.0', allowedHosts: ['Dash.Internal', '10.0.0.7'], refreshMs: 5000, now: () => 1_764_000_000_000 });
  const bound = new DashboardServer({ store, host: '192.168.1.20', refreshMs: 5000, now: () => 1_764_000_000_000 });
  afterAll(async () => {
    for (const s of [loopback, wide, bound]) await s.close();
    await store.close();
  });
  const get = (s: DashboardServer, host: string, url = '/api/trace/t-1') => s.app.inject({ url, headers: { host } });

  it.each(['localhost:8790', '127.0.0.1:8790', '[::1]:8790', 'LOCALHOST', 'localhost.'])('loopback names are answered: %s', async (host) => {
    expect((await get(loopback, host)).statusCode).toBe(200);
  });

  it.each(['attacker.example:8790', 'attacker.example', '127.0.0.1.nip.io:8790', 'localhost.attacker.example', '[::2]:8790'])('any other Host gets 403 and no SQL: %j', async (host) => {
    const before = store.sql.length;
    for (const url of ['/api/trace/t-1', '/api/panels', '/']) {
      const r = await get(loopback, host, url);
      expect(r.statusCode).toBe(403);
      expect(JSON.parse(r.body)).toMatchObject({ error: 'STEWARD_DASHBOARD_HOST' });
    }
    expect(store.sql.length).toBe(before);
  });

  it('bound elsewhere: the bind address and dashboard.allowed_hosts are answered, a wildcard bind adds no name', async () => {
    expect((await get(wide, 'dash.internal:8790')).statusCode).toBe(200);
    expect((await get(wide, '10.0.0.7')).statusCode).toBe(200);
    expect((await get(wide, '0.0.0.0:8790')).statusCode).toBe(403);
    expect((await get(wide, 'attacker.example')).statusCode).toBe(403);
    expect((await get(bound, '192.168.1.20:8790')).statusCode).toBe(200);
    expect((await get(bound, 'dash.internal')).statusCode).toBe(403);
  });
});
