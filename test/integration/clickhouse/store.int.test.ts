// ClickHouse store, migrations and the sink core against the real server (no Kafka).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { MIGRATIONS, migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { ClickHouseSink, type PoisonRow } from '../../../src/adapters/clickhouse/sink.js';
import { runReport } from '../../../src/adapters/clickhouse/reports.js';
import { decisionRow, dlqRow, trustDebtRow, verdictRow } from '../../../src/adapters/clickhouse/rows.js';
import { services, uniqueIdent } from '../setup/helpers.js';
import { generateKeyPairSync } from 'node:crypto';
import { LedgerWriter, readLedger } from '../../../src/adapters/clickhouse/ledger-store.js';
import { createSignPool } from '../../../src/adapters/crypto/sign-pool.js';
import { ed25519Signer, verifyLedger, type LedgerDraft } from '../../../src/engine/ledger/index.js';
import { StewardError } from '../../../src/errors.js';

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

  it('reports compute the analyst numbers over deduplicated rows (verdict overrides the decision; halted traces keep theirs)', async () => {
    const db = uniqueIdent('steward_it_reports');
    const s = new ClickHouseStore({ url: services().clickhouseUrl, database: db });
    try {
      await migrate(s);
      // bp-a: 4 traces — t0 block (rule), t1 ok→verdict escalate, t2 ok→verdict ok, t3 halt (no verdict). bp-b: 1 ok.
      const d = (id: string, bp: string, intervention: string, stage: string, extra: object = {}) =>
        decisionRow({ trace_id: id, agent_id: 'ag', tenant: 'acme', blueprint: bp, intervention, stage, reasons: [], tripwires: [], rules: [], latency_ms: 1, event_time_ms: 1_700_000_000_000, ...extra }, 1);
      const rows = [
        d('t0', 'bp-a', 'block', 'rule', { rules: [{ id: 'cap', passed: false }], latency_ms: 4 }),
        d('t1', 'bp-a', 'ok', 'none', { latency_ms: 2 }),
        d('t2', 'bp-a', 'ok', 'none', { latency_ms: 2 }),
        d('t3', 'bp-a', 'halt', 'tripwire', { tripwires: [{ id: 'kill', fired: true }], latency_ms: 8 }),
        d('t4', 'bp-b', 'ok', 'none'),
      ];
      await s.insert('decisions', rows);
      await s.insert('decisions', rows.slice(0, 3)); // redelivered
      const v = (id: string, intervention: string) => verdictRow({ trace_id: id, agent_id: 'ag', blueprint: 'bp-a', intervention, ctq: 0.5, risk: 0.5, metrics: [], verdict: { policy_violations: intervention === 'ok' ? [] : ['clarity'] }, event_time_ms: 1_700_000_000_000 }, 1);
      await s.insert('verdicts', [v('t1', 'escalate'), v('t2', 'ok')]);
      await s.insert('verdicts', [v('t1', 'escalate')]);
      const byBp = await runReport(s, 'interventions-by-blueprint');
      expect(byBp).toEqual([
        { blueprint: 'bp-a', traces: '4', interventions: '3', rate: 0.75, blocked: '2', escalated: '1' },
        { blueprint: 'bp-b', traces: '1', interventions: '0', rate: 0, blocked: '0', escalated: '0' },
      ]);
      const top = await runReport(s, 'top-violations');
      expect(top.map((r) => `${r.kind}:${r.id}:${r.times}`).sort()).toEqual(['metric:clarity:1', 'rule:cap:1', 'tripwire:kill:1']);
      const lat = await runReport(s, 'latency');
      expect(lat.find((r) => r.stage === 'tripwire')).toMatchObject({ decisions: '1', p50: 8 });
      const td = (id: string, at: number, after: number, level: string) =>
        trustDebtRow({ event_id: id, agent_id: 'ag', tenant: 'acme', at_ms: at, cause: 'block', before: 0, after, level }, 1);
      await s.insert('trust_debt_events', [td('e1', 1_700_000_000_000, 0.3, 'elevated_monitoring'), td('e2', 1_700_000_100_000, 0.62, 'restricted_mode')]);
      expect(await runReport(s, 'restricted-agents')).toEqual([expect.objectContaining({ agent_id: 'ag', debt: 0.62, level: 'restricted_mode' })]);
      await s.insert('dlq_events', [
        dlqRow({ dlq_topic: 'acgp.dlq', dlq_partition: 0, dlq_offset: '1', source_topic: 'acgp.traces', source_partition: 0, source_offset: '9', source_ts_ms: 5, stage: 'tripwire', code: 'STEWARD_TRACE_JSON', timestamp_ms: 6, value_bytes: 1 }, 1),
        dlqRow({ dlq_topic: 'acgp.dlq', dlq_partition: 0, dlq_offset: '2', source_topic: 'acgp.traces', source_partition: 0, source_offset: '9', source_ts_ms: 5, stage: 'tripwire', code: 'STEWARD_TRACE_JSON', timestamp_ms: 7, value_bytes: 1 }, 1),
      ]);
      expect(await runReport(s, 'dlq-reasons')).toEqual([expect.objectContaining({ code: 'STEWARD_TRACE_JSON', records: '1' })]);
    } finally {
      await s.command(`DROP DATABASE IF EXISTS ${db}`);
      await s.close();
    }
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
  it('LedgerWriter with bulk signing: a failed signing call stores nothing, and the retry chains on from the stored head', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const signer = ed25519Signer(privateKey);
    const pool = createSignPool(privateKey, 1);
    let failNext = false;
    const writer = new LedgerWriter(store, signer, {
      signMany: async (h) => {
        if (!failNext) return pool.signMany(h);
        failNext = false;
        throw new StewardError('STEWARD_LEDGER_CHAIN', 'signing thread lost', { retryable: true });
      },
    });
    const drafts = (from: number, to: number): LedgerDraft[] =>
      Array.from({ length: to - from + 1 }, (_, k) => ({ entry_id: `pd-${from + k}`, agent_id: 'ledger-agent', tenant: 'acme', ts_ms: 1_700_000_000_000 + (from + k) * 1000, type: 'POLICY_DECISION', payload: { n: from + k } }));
    try {
      await store.insert('ledger', await writer.append(drafts(1, 5)));
      failNext = true;
      await expect(writer.append(drafts(6, 10))).rejects.toMatchObject({ retryable: true });
      await store.insert('ledger', await writer.append(drafts(6, 10)));
      const entries = await readLedger(store, 'ledger-agent');
      expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      const r = verifyLedger(entries, { [signer.kid]: publicKey.export({ type: 'spki', format: 'pem' }).toString() });
      expect(r.issues).toEqual([]);
    } finally {
      await pool.close();
    }
  });
  it('LedgerWriter signing one by one: a signer failing mid-batch stores nothing, and the retry chains the whole batch on', async () => {
    const real = ed25519Signer(generateKeyPairSync('ed25519').privateKey);
    let calls = 0;
    let failAt = 2;
    const flaky = { kid: real.kid, sign: (h: string) => { if (++calls === failAt) throw new StewardError('STEWARD_LEDGER_CHAIN', 'KMS unavailable', { retryable: true }); return real.sign(h); } };
    const writer = new LedgerWriter(store, flaky);
    const drafts = Array.from({ length: 3 }, (_, k): LedgerDraft => ({ entry_id: `s-${k}`, agent_id: 'sync-agent', tenant: 'acme', ts_ms: 1_700_000_000_000 + k, type: 'POLICY_DECISION', payload: { k } }));
    await expect(writer.append(drafts)).rejects.toThrow('KMS unavailable');
    failAt = 0;
    await store.insert('ledger', await writer.append(drafts));
    expect((await readLedger(store, 'sync-agent')).map((e) => [e.entry_id, e.seq])).toEqual([['s-0', 1], ['s-1', 2], ['s-2', 3]]);
  });

});

describe('ClickHouse credentials in the URL (real server)', () => {
  // scripts/services.sh defines user steward_it (password with URL-reserved characters) allowed database
  // steward_it_cred only: an insert sent as anyone else (the insert path used to send `default`) would pass.
  it('queries and the sink\'s inserts both run as the URL\'s user', async () => {
    const admin = new ClickHouseStore({ url: services().clickhouseUrl, database: 'steward_it_cred' });
    const other = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_other') });
    const url = new URL(services().clickhouseUrl);
    url.username = 'steward_it';
    url.password = encodeURIComponent('it-secret@1:/');
    const store = new ClickHouseStore({ url: url.toString(), database: 'steward_it_cred' });
    const elsewhere = new ClickHouseStore({ url: url.toString(), database: other.database });
    try {
      await admin.command('DROP DATABASE IF EXISTS steward_it_cred');
      await migrate(other);
      await migrate(store); // as steward_it
      await store.insert('decisions', [decisionRow(decision(1), 1)]);
      expect(Number((await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('decisions')}`))[0]!.n)).toBe(1);
      // the same user may not write another database: the insert must go out as steward_it, not as default
      await expect(elsewhere.insert('decisions', [decisionRow(decision(2), 1)])).rejects.toThrow(/steward_it|Access|not allowed/i);
      expect(Number((await other.query<{ n: string }>(`SELECT count() AS n FROM ${other.table('decisions')}`))[0]!.n)).toBe(0);
    } finally {
      await store.close();
      await elsewhere.close();
      await admin.command('DROP DATABASE IF EXISTS steward_it_cred');
      await other.command(`DROP DATABASE IF EXISTS ${other.database}`);
      await admin.close();
      await other.close();
    }
  });
});
