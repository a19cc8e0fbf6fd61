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
});
