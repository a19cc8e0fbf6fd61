// The dashboard's panel cache on real ClickHouse: a repeated load over unchanged data reads no table (served from
// the cache, same answer as an uncached load), and a row inserted afterwards is in the very next answer even with
// a TTL far longer than the test — the data fingerprint (system.parts), not the TTL, decides. docs/dashboard.md "Performance".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { loadPanels, type Panel } from '../../../src/adapters/dashboard/data.js';
import { ReadOnlyClickHouseStore } from '../../../src/adapters/dashboard/read-only-store.js';
import { DashboardServer } from '../../../src/adapters/dashboard/server.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const T0 = 1_767_225_600_000;

describe('dashboard panel cache on ClickHouse', () => {
  const database = uniqueIdent('steward_dash_cache');
  let admin: ClickHouseStore;
  let ro: ReadOnlyClickHouseStore;
  let server: DashboardServer;

  /** `n` decisions (trace ids t-<first>…), every other one blocked, one per second from T0 + first s. */
  const addDecisions = (first: number, n: number) =>
    admin.command(
      `INSERT INTO ${database}.decisions (trace_id, agent_id, tenant, blueprint, intervention, stage, latency_ms, event_time_ms, decided_at_ms, ingested_at_ms)
       SELECT concat('t-', toString(${first} + number)), 'agent-1', 'acme', 'bp@1', if(number % 2 = 0, 'block', 'ok'), 'tripwire', 1.5,
              ${T0} + (${first} + number) * 1000, ${T0} + (${first} + number) * 1000 + 2, 1 FROM numbers(${n})`,
    );
  const total = (panels: Panel[], id: string) => (panels.find((p) => p.id === id)?.totals ?? []).reduce((s, x) => s + x.total, 0);
  const get = async () => {
    const r = await server.app.inject({ url: `/api/panels?from=${T0}&to=${T0 + 3_600_000}` });
    expect(r.statusCode).toBe(200);
    return JSON.parse(r.body) as { panels: Panel[] };
  };

  beforeAll(async () => {
    admin = new ClickHouseStore({ url: services().clickhouseUrl, database });
    await migrate(admin);
    ro = new ReadOnlyClickHouseStore({ url: services().clickhouseUrl, database });
    await addDecisions(0, 10);
    // A TTL far beyond the test: only the fingerprint can make it recompute.
    server = new DashboardServer({ store: ro, refreshMs: 3_600_000 });
  }, 60_000);

  afterAll(async () => {
    await server?.close().catch(() => undefined);
    await ro?.close().catch(() => undefined);
    await admin?.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await admin?.close().catch(() => undefined);
  });

  it('serves a repeated load from the cache with the uncached answer, and recomputes on the next load after an insert', async () => {
    const first = await get();
    expect(total(first.panels, 'traces')).toBe(10);
    expect(total(first.panels, 'interventions-type')).toBe(5);
    const again = await get();
    expect(server.panelCache!.computed).toBe(1);
    expect(server.panelCache!.hits).toBe(1);
    const uncached = await loadPanels({ store: ro }, { fromMs: T0, toMs: T0 + 3_600_000, bucketMs: 60_000 }, 0);
    expect(again.panels).toEqual(JSON.parse(JSON.stringify(uncached.panels)));

    await addDecisions(10, 4);
    const after = await get();
    expect(server.panelCache!.computed).toBe(2);
    expect(total(after.panels, 'traces')).toBe(14);
    expect(total(after.panels, 'interventions-type')).toBe(7);
  }, 60_000);

  it('counts a redelivered copy once after the insert too (the recomputation reads FINAL as before)', async () => {
    await addDecisions(0, 2);
    const p = await get();
    expect(total(p.panels, 'traces')).toBe(14);
    expect(server.panelCache!.computed).toBe(3);
  }, 60_000);
});
