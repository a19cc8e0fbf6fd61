// The sink's TabSeparated encoding against the real server: column specs match the migrated tables, nasty
// strings and arrays round-trip byte for byte in every sink table, and a wrong-typed value is isolated as poison.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { ClickHouseSink, type PoisonRow } from '../../../src/adapters/clickhouse/sink.js';
import { TABLE_COLUMNS, decisionRow, dlqRow, gateRow, ledgerRow, trustDebtRow, verdictRow } from '../../../src/adapters/clickhouse/rows.js';
import { DecisionTsvWriter } from '../../../src/adapters/clickhouse/decision-writer.js';
import { VerdictTsvWriter } from '../../../src/adapters/clickhouse/verdict-writer.js';
import { services, uniqueIdent } from '../setup/helpers.js';

/** Everything TSV and quoted-array escaping must survive. */
const NASTY = [
  'tab\there',
  'new\nline',
  'carriage\rreturn',
  'back\\slash',
  'trailing backslash \\',
  '\\N',
  '\\t literally',
  "single 'quote'",
  'double "quote"',
  "both ' and \\' and \\\\'",
  'NUL \0 inside',
  'ünïcødé — 日本語 — 🚀👩‍👩‍👧 — e\u0301',
  '[not, an, array]',
  '',
  ' leading and trailing spaces ',
  'NULL',
];

describe('TabSeparated inserts (real server)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_tsv') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  it('each column spec names every column of its table with the server-side type', async () => {
    for (const [table, cols] of Object.entries(TABLE_COLUMNS)) {
      const got = await store.query<{ name: string; type: string }>(
        `SELECT name, type FROM system.columns WHERE database = '${store.database}' AND table = '${table}' ORDER BY name`,
      );
      expect(got.map((c) => [c.name, c.type]), table).toEqual(Object.entries(cols).sort(([a], [b]) => (a < b ? -1 : 1)));
    }
  });

  it('nasty strings and arrays round-trip exactly in decisions and verdicts', async () => {
    const decisions = NASTY.map((s, i) =>
      decisionRow(
        {
          trace_id: `d-${i}`, agent_id: s || 'empty', tenant: s, blueprint: s, intervention: 'block', stage: s, severity: s,
          reasons: [s, ...NASTY.slice(0, i)], tripwires: [{ id: s, fired: true, reason: s }], rules: i % 2 ? [] : [{ id: s, passed: false }],
          latency_ms: 0.1 + 0.2, event_time_ms: 1_700_000_000_000 + i, hook: s, tool: s, session_id: s, engine_version: s,
        },
        1,
      ),
    );
    await store.insert('decisions', decisions);
    const gotD = await store.query<Record<string, unknown>>(`SELECT * FROM ${store.table('v_decisions')} ORDER BY event_time_ms`);
    expect(gotD.map(normalise)).toEqual(decisions.map(normalise));

    const verdicts = NASTY.map((s, i) =>
      verdictRow(
        {
          trace_id: `v-${i}`, agent_id: 'a', tenant: s, blueprint: s, intervention: 'flag', stage: s,
          ctq: i % 3 === 0 ? null : 1 / 3, risk: i % 2 ? null : 1e-7,
          metrics: [{ name: s, score: i % 2 ? null : 0.75, status: s }, { name: 'x', score: 1, status: 'ok' }],
          verdict: { policy_violations: i % 4 ? [s, s] : [], signature: { sig: s }, note: s }, event_time_ms: 1_700_000_000_000 + i,
        },
        1,
      ),
    );
    await store.insert('verdicts', verdicts);
    const gotV = await store.query<Record<string, unknown>>(`SELECT * FROM ${store.table('v_verdicts')} ORDER BY event_time_ms`);
    expect(gotV.map(normalise)).toEqual(verdicts.map(normalise));
  });

  it('nasty strings round-trip in trust_debt_events, ledger, dlq_events and gate_events', async () => {
    const td = NASTY.map((s, i) =>
      trustDebtRow({ event_id: `e-${i}`, agent_id: 'a', tenant: s, at_ms: 1_700_000_000_000 + i, cause: s, before: 0.1, after: 0.30000000000000004, level: s || 'normal', previous_level: s, crossings: [s, { threshold: s, direction: 'up' }], trace_id: s }, 1),
    );
    const ledger = NASTY.map((s, i) =>
      ledgerRow({ entry_id: `l-${i}`, agent_id: 'a', tenant: s, seq: i + 1, ts_ms: 1_700_000_000_000 + i, type: 'POLICY_DECISION', payload: { s }, prev_hash: s, hash: s, signature: s, kid: s }, JSON.stringify({ s }), 1),
    );
    const dlq = NASTY.map((s, i) =>
      dlqRow({ dlq_topic: 'acgp.dlq', dlq_partition: 1, dlq_offset: String(i), source_topic: 't', source_partition: -1, source_offset: `${i}`, source_ts_ms: 1_700_000_000_000, stage: s, code: s, message: s, timestamp_ms: 1_700_000_000_000, key: s, value_bytes: i }, 1),
    );
    const gate = NASTY.map((s, i) => gateRow({ trace_id: `g-${i}`, agent_id: 'a', tenant: s, intervention: 'ok', ts_ms: 1_700_000_000_000 + i, extra: s }, 1));
    await Promise.all([store.insert('trust_debt_events', td), store.insert('ledger', ledger), store.insert('dlq_events', dlq), store.insert('gate_events', gate)]);
    const read = (sql: string) => store.query<Record<string, unknown>>(sql).then((rows) => rows.map(normalise));
    expect(await read(`SELECT * FROM ${store.table('v_trust_debt_events')} ORDER BY ts_ms`)).toEqual(td.map(normalise));
    expect(await read(`SELECT * FROM ${store.table('ledger')} ORDER BY seq`)).toEqual(ledger.map(normalise));
    expect(await read(`SELECT * FROM ${store.table('v_dlq_events')} ORDER BY dlq_offset`)).toEqual(dlq.map(normalise));
    expect(await read(`SELECT * FROM ${store.table('v_gate_events')} ORDER BY ts_ms`)).toEqual(gate.map(normalise));
  });

  it('decisions scanned from their bytes (the sink fast path) read back exactly as the reference rows do', async () => {
    const record = (s: string, i: number, prefix: string) => ({
      trace_id: `${prefix}-${i}`, agent_id: s || 'empty', tenant: s, blueprint: s, intervention: i % 2 ? 'block' : 'ok', stage: s, severity: s,
      reasons: [s, "it's", 'ü'], tripwires: [{ id: s, fired: true, reason: s }, { id: 'x', fired: false }],
      rules: i % 2 ? [] : [{ id: s, passed: false, score: 0.75 }], latency_ms: 0.1 + 0.2, event_time_ms: 1_700_000_100_000 + i,
      decided_at_ms: 1_700_000_100_000 + i + 0.5, hook: s, tool: s, session_id: s, engine_version: s, extra: { s, n: [1, null] },
    });
    const writer = new DecisionTsvWriter(1);
    const sources: number[] = [];
    NASTY.forEach((s, i) => {
      if (writer.add(Buffer.from(JSON.stringify(record(s, i, 'scan'))))) sources.push(i);
    });
    // Strings JSON must escape (tab, newline, backslash, quote, NUL) are left to the reference path.
    // eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
    expect(sources.length).toBe(NASTY.filter((s) => !/[\\\u0000-\u001f"]/.test(s)).length);
    const sink = new ClickHouseSink(store, { maxRows: 100, maxDelayMs: 5, onPoison: async () => Promise.reject(new Error('no poison expected')) });
    await sink.writeEncoded('decisions', writer.bytes(), sources);
    await store.insert('decisions', sources.map((i) => decisionRow(record(NASTY[i], i, 'ref'), 1)));
    const read = (prefix: string) =>
      store
        .query<Record<string, unknown>>(`SELECT * FROM ${store.table('v_decisions')} WHERE trace_id LIKE '${prefix}-%' ORDER BY event_time_ms`)
        .then((rows) => rows.map((r) => normalise({ ...r, trace_id: String(r.trace_id).slice(prefix.length) })));
    const scanned = await read('scan');
    expect(scanned).toHaveLength(sources.length);
    expect(scanned).toEqual(await read('ref'));
  });

  it('verdicts scanned from their bytes (the sink fast path) read back exactly as the reference rows do', async () => {
    const record = (s: string, i: number, prefix: string) => ({
      trace_id: `${prefix}-${i}`, agent_id: s || 'empty', blueprint: s, intervention: i % 2 ? 'escalate' : 'ok', stage: s,
      ctq: i % 3 ? 0.1 + 0.2 : null, risk: i % 2 ? null : 1e-7,
      metrics: [{ name: s, score: i % 2 ? null : 0.75, status: s, weight: 1 }, { name: 'x', score: 1, status: 'ok' }],
      verdict: { approved: i % 2 === 0, policy_violations: [s, "it's"], confidence_score: 0.5, metadata: { tenant_id: s, latency_ms: 1.5 }, signature: i % 2 ? { sig: s } : s },
      event_time_ms: 1_700_000_200_000 + i, scored_at_ms: 1_700_000_200_000 + i + 0.25,
    });
    const writer = new VerdictTsvWriter(1);
    const sources: number[] = [];
    NASTY.forEach((s, i) => {
      if (writer.add(Buffer.from(JSON.stringify(record(s, i, 'vscan'))))) sources.push(i);
    });
    // eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
    expect(sources.length).toBe(NASTY.filter((s) => !/[\\\u0000-\u001f"]/.test(s)).length);
    const sink = new ClickHouseSink(store, { maxRows: 100, maxDelayMs: 5, onPoison: async () => Promise.reject(new Error('no poison expected')) });
    await sink.writeEncoded('verdicts', writer.bytes(), sources);
    await store.insert('verdicts', sources.map((i) => verdictRow(record(NASTY[i], i, 'vref'), 1)));
    const read = (prefix: string) =>
      store
        .query<Record<string, unknown>>(`SELECT * FROM ${store.table('v_verdicts')} WHERE trace_id LIKE '${prefix}-%' ORDER BY event_time_ms`)
        .then((rows) => rows.map((r) => normalise({ ...r, trace_id: String(r.trace_id).slice(prefix.length) })));
    const scanned = await read('vscan');
    expect(scanned).toHaveLength(sources.length);
    expect(scanned).toEqual(await read('vref'));
  });

  it('a wrong-typed value (with a tab in it) is isolated as poison; its neighbours land intact', async () => {
    const poison: PoisonRow[] = [];
    const sink = new ClickHouseSink(store, { maxRows: 100, maxDelayMs: 5, onPoison: async (p) => void poison.push(...p) });
    const rows = Array.from({ length: 9 }, (_, i) => ({
      row: decisionRow({ trace_id: `p-${i}`, agent_id: 'poison-test', intervention: 'ok', reasons: [NASTY[i]], event_time_ms: 1_700_000_000_000 }, 1),
      source: i,
    }));
    const bad = { row: { ...rows[4].row, trace_id: 'p-bad', latency_ms: 'fast\tvery' }, source: 'bad' };
    await sink.write('decisions', [...rows.slice(0, 4), bad, ...rows.slice(4)]);
    expect(poison.map((p) => p.source)).toEqual(['bad']);
    expect(poison[0].error).toMatchObject({ code: 'STEWARD_CLICKHOUSE', retryable: false });
    const got = await store.query<{ trace_id: string; reasons: string[] }>(
      `SELECT trace_id, reasons FROM ${store.table('v_decisions')} WHERE agent_id = 'poison-test' ORDER BY trace_id`,
    );
    expect(got).toEqual(rows.map((r) => ({ trace_id: r.row.trace_id, reasons: r.row.reasons })));
  });
});

/** UInt64 come back as strings (JSON 64-bit quoting); compare numbers as numbers. */
function normalise(r: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) out[k] = typeof v === 'string' && /_ms$|^seq$|^dlq_offset$|^value_bytes$/.test(k) ? Number(v) : v;
  return out;
}
