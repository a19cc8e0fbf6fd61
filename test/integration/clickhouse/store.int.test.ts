// ClickHouse store, migrations and the sink core against the real server (no Kafka).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { MIGRATIONS, migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { decisionRow, trustDebtRow, verdictRow } from '../../../src/adapters/clickhouse/rows.js';
import { ClickHouseSink, type PoisonRow } from '../../../src/adapters/clickhouse/sink.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const decision = (i: number, agent = `agent-${i % 4}`) => ({
  trace_id: `t-${i}`,
  agent_id: agent,
  tenant: 'acme',
  blueprint: i % 2 ? 'finance/trading_bot@1.0' : 'clarity.baseline@1.0',
  intervention: i % 5 === 0 ? 'block' : 'ok',
  stage: i % 5 === 0 ? 'rule' : 'none',
  reasons: [],
  tripwires: [{ id: 'tw', fired: false }],
  rules: [{ id: 'cap', passed: i % 5 !== 0 }],
  latency_ms: 1 + (i % 7),
  event_time_ms: 1_700_000_000_000 + i * 60_000,
});

describe('ClickHouse store (real server)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_store') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  it('migrations are recorded and idempotent; an edited applied migration is refused', async () => {
    const again = await migrate(store);
    expect(again.applied).toEqual([]);
    expect(again.alreadyApplied).toEqual(MIGRATIONS.map((m) => m.version));
    const rows = await store.query<{ version: string }>(`SELECT version FROM ${store.table('schema_migrations')} FINAL ORDER BY version`);
    expect(rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
    const tables = await store.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${store.database}' ORDER BY name`);
    expect(tables.map((t) => t.name)).toEqual(
      expect.arrayContaining(['decisions', 'verdicts', 'trust_debt_events', 'ledger', 'dlq_events', 'gate_events', 'v_decisions', 'v_outcomes']),
    );
    const edited = MIGRATIONS.map((m) => (m.version === 1 ? { ...m, statements: [...m.statements, 'SELECT 1'] } : m));
    await expect(migrate(store, { migrations: edited })).rejects.toThrow(/changed after it was applied/);
  });

  it('redelivered rows (separate inserts, before any merge) count exactly once in the views', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => decisionRow(decision(1000 + i), 1));
    await store.insert('decisions', rows);
    await store.insert('decisions', rows.slice(0, 20).map((r) => ({ ...r, ingested_at_ms: 2 })));
    await store.insert('decisions', rows.slice(10, 30).map((r) => ({ ...r, ingested_at_ms: 3 })));
    const raw = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('decisions')} WHERE trace_id LIKE 't-1%'`);
    expect(Number(raw[0].n)).toBe(90); // the copies really are stored
    const v = await store.query<{ n: string; u: string }>(`SELECT count() AS n, uniqExact(trace_id) AS u FROM ${store.table('v_decisions')} WHERE trace_id LIKE 't-1%'`);
    expect(v[0]).toEqual({ n: '50', u: '50' });

    const td = trustDebtRow({ event_id: 'e-1', agent_id: 'a', tenant: 'acme', at_ms: 1_700_000_000_000, cause: 'block', before: 0, after: 0.15, level: 'normal' }, 1);
    await store.insert('trust_debt_events', [td]);
    await store.insert('trust_debt_events', [{ ...td, ingested_at_ms: 2 }]);
    const t = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('v_trust_debt_events')}`);
    expect(t[0].n).toBe('1');
  });

  it('ClickHouseSink isolates a row the server rejects and inserts the rest', async () => {
    const poison: PoisonRow[] = [];
    const sink = new ClickHouseSink(store, { maxRows: 64, maxDelayMs: 10, onPoison: async (p) => void poison.push(...p) });
    const good = Array.from({ length: 40 }, (_, i) => ({ row: verdictRow({ trace_id: `v-${i}`, agent_id: 'a', blueprint: 'b', intervention: 'ok', ctq: 0.9, risk: 0.1, metrics: [], verdict: {}, event_time_ms: 1_700_000_000_000 }, 1), source: i }));
    const bad = { row: { ...good[0].row, trace_id: 'v-bad', event_time_ms: 'yesterday' }, source: 'bad' };
    await sink.write('verdicts', [...good.slice(0, 17), bad, ...good.slice(17)]);
    expect(poison.map((p) => p.source)).toEqual(['bad']);
    expect(poison[0].error).toMatchObject({ code: 'STEWARD_CLICKHOUSE', retryable: false });
    const n = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('v_verdicts')} WHERE trace_id LIKE 'v-%'`);
    expect(n[0].n).toBe('40');
  });

  it('a server that does not answer is a retryable error (the sink waits instead of dead-lettering)', async () => {
    const down = new ClickHouseStore({ url: 'http://127.0.0.1:1', database: 'x', requestTimeoutMs: 2000 });
    await expect(down.insert('decisions', [{ a: 1 }])).rejects.toMatchObject({ code: 'STEWARD_CLICKHOUSE', retryable: true });
    await down.close();
  });
});
