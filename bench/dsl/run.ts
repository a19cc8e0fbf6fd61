/**
 * bench:dsl — the §9.4.5 dangerous_db_ops invariant and `args.trade_value <= 100000`, over three trace
 * shapes (benign SELECT, DROP TABLE on a non-allowlisted table, a 200,000 trade), evaluated by:
 * our compiled DSL, a hand-written JS function of the same logic (the baseline), @marcbachmann/cel-js
 * and json-rules-engine. All four must agree on every trace before anything is timed.
 * Prints ops/s per engine and `dsl_vs_handwritten=<time ratio>` last (goal <= 2.0).
 * Issue #28: the SQL-aware rule of code/assistant@1.0 (parsed with node-sql-parser, parse cache keyed
 * by the text) against the keyword-regex rule and the plain `contains` rule over the same two database
 * traces: `sql_rule_vs_regex_rule=` and `sql_rule_vs_contains_rule=` (time ratios, goal <= 20).
 * The same rule with the ClickHouse dialect over two ClickHouse traces (FINAL/PREWHERE/SETTINGS read,
 * TRUNCATE … ON CLUSTER): `sql_rule_clickhouse_vs_regex_rule=`; cold parses (cache missed):
 * `sql_parse_cold_us=` and `clickhouse_parse_cold_us=`; the start-up cost of the SQL grammars in fresh
 * processes: `sql_grammars_load_ms_all_dialects=` (the package index, as before) against
 * `sql_grammars_load_ms_postgresql=` / `_clickhouse=` (the per-dialect builds facts.ts now loads).
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { parse as celParse } from '@marcbachmann/cel-js';
import { Engine } from 'json-rules-engine';
import { compileCondition, type DslCompileOptions } from '../../src/engine/dsl/index.js';
import { sqlFacts } from '../../src/engine/dsl/facts.js';
import type { EvalContext, Trace } from '../../src/engine/types.js';

const opts: DslCompileOptions = { lists: { deletable_tables: ['tmp_scratch', 'staging_events'] }, internalDomains: [], internalCidrs: [], namedPatterns: {} };

const DANGEROUS = {
  NOT: {
    all: [
      'tool == "database_query"',
      { any: ['action.query contains "DROP"', 'action.query contains "DELETE FROM"', 'action.query contains "TRUNCATE"'] },
      'NOT in_allowlist(action.table, "deletable_tables")',
    ],
  },
};
const TRADE = 'args.trade_value <= 100000';
// The SQL-aware rule (blueprints/code/assistant@1.0.yaml) and the keyword-regex rule it replaced.
const SQL_RULE = {
  all: [
    { any: ['sql_tables_dropped(action.query) == []', 'in_allowlist(sql_tables_dropped(action.query), "deletable_tables")'] },
    { any: ['NOT (sql_statements(action.query) contains "delete" OR sql_unbounded_write(action.query))', 'in_allowlist(sql_tables_written(action.query), "deletable_tables")'] },
  ],
};
const chRule = (q: string): string => q.replace(/action\.query\)/g, 'action.query, "clickhouse")');
const SQL_RULE_CH = { all: SQL_RULE.all.map((x) => ({ any: x.any.map(chRule) })) };
const REGEX_RULE = {
  NOT: {
    all: [
      { any: ['matches_regex(action.query, "(?i)\\bDROP\\b")', 'matches_regex(action.query, "(?i)\\bDELETE\\s+FROM\\b")', 'matches_regex(action.query, "(?i)\\bTRUNCATE\\b")'] },
      'NOT in_allowlist(action.table, "deletable_tables")',
    ],
  },
};

const base = { agent_id: 'trader-1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call' };
const traces: Trace[] = [
  { ...base, trace_id: 't-select', tool: 'database_query', action: { query: 'SELECT id, name FROM customers WHERE region = $1', table: 'customers' }, args: {} },
  { ...base, trace_id: 't-drop', tool: 'database_query', action: { query: 'DROP TABLE customers', table: 'customers' }, args: {} },
  { ...base, trace_id: 't-trade', tool: 'execute_trade', args: { trade_value: 200_000, symbol: 'ACME' }, action: {} },
];
const chTraces: Trace[] = [
  {
    ...base,
    trace_id: 't-ch-select',
    tool: 'database_query',
    action: { query: "SELECT toStartOfHour(ts) AS h, uniqExact(uid) FROM events FINAL PREWHERE ts > now() - INTERVAL 1 DAY WHERE kind == 'click' GROUP BY h SETTINGS max_threads = 2", table: 'events' },
    args: {},
  },
  { ...base, trace_id: 't-ch-truncate', tool: 'database_query', action: { query: 'TRUNCATE TABLE shop.customers ON CLUSTER main SYNC', table: 'customers' }, args: {} },
];
// Per trace: [dangerous_db_ops holds, trade limit holds]
const EXPECTED = [
  [true, false],
  [false, false],
  [true, false],
];

const agent = { id: 'trader-1', tenant: 'acme', tier: 'ACL-3' as const, tools: [], domains: [], registered: true };
const ctxs: EvalContext[] = traces.map((trace) => ({ trace, agent, trustDebt: 0, nowMs: 0, stateNamespace: 'acme:trader-1' }));

// ── our DSL
const c1 = compileCondition(DANGEROUS, opts).condition!;
const c2 = compileCondition(TRADE, opts).condition!;
const cSql = compileCondition(SQL_RULE, opts).condition!;
const cRegex = compileCondition(REGEX_RULE, opts).condition!;
const cContains = c1;
const ruleEval = (c: typeof c1) => (i: number): number => ((c.evaluate(ctxs[i % 2]!) as boolean) ? 1 : 0);
const sqlRule = ruleEval(cSql);
const cSqlCh = compileCondition(SQL_RULE_CH, opts).condition!;
const chCtxs: EvalContext[] = chTraces.map((trace) => ({ trace, agent, trustDebt: 0, nowMs: 0, stateNamespace: 'acme:trader-1' }));
const chEval = (c: typeof c1) => (i: number): number => ((c.evaluate(chCtxs[i % 2]!) as boolean) ? 1 : 0);
const sqlRuleCh = chEval(cSqlCh);
const regexRuleCh = chEval(cRegex);
const regexRule = ruleEval(cRegex);
const containsRule = ruleEval(cContains);
const dsl = (i: number): number => ((c1.evaluate(ctxs[i]!) as boolean) ? 1 : 0) + ((c2.evaluate(ctxs[i]!) as boolean) ? 2 : 0);

// ── hand-written baseline: the same semantics (missing → false, strings only for contains)
const deletable = new Set(opts.lists.deletable_tables);
function dangerousOk(t: Trace): boolean {
  if (t.tool !== 'database_query') return true;
  const q = (t.action as { query?: unknown } | undefined)?.query;
  if (!(typeof q === 'string' && (q.includes('DROP') || q.includes('DELETE FROM') || q.includes('TRUNCATE')))) return true;
  const table = (t.action as { table?: unknown } | undefined)?.table;
  return typeof table === 'string' && deletable.has(table);
}
function tradeOk(t: Trace): boolean {
  const v = (t.args as { trade_value?: unknown } | undefined)?.trade_value;
  return typeof v === 'number' && v <= 100000;
}
const hand = (i: number): number => (dangerousOk(ctxs[i]!.trace) ? 1 : 0) + (tradeOk(ctxs[i]!.trace) ? 2 : 0);

// ── CEL (@marcbachmann/cel-js)
const celDanger = celParse(
  '!(tool == "database_query" && (action.query.contains("DROP") || action.query.contains("DELETE FROM") || action.query.contains("TRUNCATE")) && !(action.table in deletable))',
);
const celTrade = celParse('has(args.trade_value) && args.trade_value <= 100000.0');
const celCtx = traces.map((t) => ({ ...t, deletable: opts.lists.deletable_tables }));
const cel = (i: number): number => (celDanger(celCtx[i]!) === true ? 1 : 0) + (celTrade(celCtx[i]!) === true ? 2 : 0);

// ── json-rules-engine
const jre = new Engine([], { allowUndefinedFacts: true });
jre.addOperator('strContains', (a: unknown, b: unknown) => typeof a === 'string' && typeof b === 'string' && a.includes(b));
jre.addRule({
  conditions: {
    not: {
      all: [
        { fact: 'tool', operator: 'equal', value: 'database_query' },
        {
          any: ['DROP', 'DELETE FROM', 'TRUNCATE'].map((v) => ({ fact: 'action', path: '$.query', operator: 'strContains', value: v })),
        },
        { not: { fact: 'action', path: '$.table', operator: 'in', value: opts.lists.deletable_tables } },
      ],
    },
  },
  event: { type: 'db_ok' },
});
jre.addRule({ conditions: { all: [{ fact: 'args', path: '$.trade_value', operator: 'lessThanInclusive', value: 100000 }] }, event: { type: 'trade_ok' } });
async function jreEval(i: number): Promise<number> {
  const { events } = await jre.run({ ...traces[i]! });
  return (events.some((e) => e.type === 'db_ok') ? 1 : 0) + (events.some((e) => e.type === 'trade_ok') ? 2 : 0);
}

function expectedCode(i: number): number {
  return (EXPECTED[i]![0] ? 1 : 0) + (EXPECTED[i]![1] ? 2 : 0);
}

async function verify(): Promise<void> {
  for (let i = 0; i < traces.length; i++) {
    const want = expectedCode(i);
    const got = { dsl: dsl(i), hand: hand(i), cel: cel(i), jre: await jreEval(i) };
    for (const [k, v] of Object.entries(got)) if (v !== want) throw new Error(`${k} disagrees on ${traces[i]!.trace_id}: ${v} != ${want}`);
  }
  // The database rules agree on the two database traces (SELECT holds, DROP customers fails).
  for (const i of [0, 1]) {
    const want = EXPECTED[i]![0] ? 1 : 0;
    for (const [k, f] of Object.entries({ sqlRule, regexRule, containsRule })) if (f(i) !== want) throw new Error(`${k} disagrees on ${traces[i]!.trace_id}`);
    // The ClickHouse pair: the read holds, TRUNCATE … ON CLUSTER fails, for both rules.
    for (const [k, f] of Object.entries({ sqlRuleCh, regexRuleCh })) if (f(i) !== 1 - i) throw new Error(`${k} disagrees on ${chTraces[i]!.trace_id}`);
  }
}

function timeSync(fn: (i: number) => number, iterations: number): number {
  let sink = 0;
  const start = performance.now();
  for (let k = 0; k < iterations; k++) sink += fn(k % 3);
  const ms = performance.now() - start;
  if (sink < 0) console.log(sink);
  return (iterations / ms) * 1000;
}

async function timeAsync(fn: (i: number) => Promise<number>, iterations: number): Promise<number> {
  let sink = 0;
  const start = performance.now();
  for (let k = 0; k < iterations; k++) sink += await fn(k % 3);
  const ms = performance.now() - start;
  if (sink < 0) console.log(sink);
  return (iterations / ms) * 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Median µs of a parse the cache cannot answer (a new text each time). */
function coldParseUs(dialect: 'postgresql' | 'clickhouse', text: (k: number) => string): number {
  const xs: number[] = [];
  for (let k = 0; k < 400; k++) {
    const q = text(1_000_000 + k + (dialect === 'clickhouse' ? 10_000 : 0));
    const t0 = performance.now();
    sqlFacts(q, dialect);
    xs.push((performance.now() - t0) * 1000);
  }
  return median(xs.slice(50));
}

// Modules a process loads for SQL facts: the package index (every grammar, as facts.ts did before) or the
// per-dialect builds (postgresql; clickhouse reads through postgresql, then mysql on a miss).
const LOADS: Record<string, string[]> = { all_dialects: ['node-sql-parser'], postgresql: ['node-sql-parser/build/postgresql.js'], pg_mysql_sqlite: ['node-sql-parser/build/postgresql.js', 'node-sql-parser/build/mysql.js', 'node-sql-parser/build/sqlite.js'] };

/** Median ms to require the modules and make a Parser, in 5 fresh node processes. */
function loadMs(mods: string[]): number {
  const paths = mods.map((m) => createRequire(import.meta.url).resolve(m));
  const code = `const t=process.hrtime.bigint();for(const p of ${JSON.stringify(paths)}){new (require(p).Parser)()}console.log(Number(process.hrtime.bigint()-t)/1e6)`;
  const xs = Array.from({ length: 5 }, () => Number(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' }).trim()));
  return median(xs);
}

async function main(): Promise<void> {
  await verify();
  const N = 3_000_000;
  // Warm up every engine, then alternate rounds so drift (other load on the machine) hits all equally.
  timeSync(dsl, N / 3);
  timeSync(hand, N / 3);
  timeSync(cel, N / 30);
  await timeAsync(jreEval, 3_000);
  const r: Record<string, number[]> = { dsl: [], handwritten: [], cel: [], 'json-rules-engine': [] };
  for (let round = 0; round < 7; round++) {
    r.handwritten!.push(timeSync(hand, N));
    r.dsl!.push(timeSync(dsl, N));
    r.cel!.push(timeSync(cel, N / 10));
  }
  const db: Record<string, number[]> = { sql: [], regex: [], contains: [] };
  for (let round = 0; round < 7; round++) {
    db.contains!.push(timeSync(containsRule, N / 10));
    db.regex!.push(timeSync(regexRule, N / 10));
    db.sql!.push(timeSync(sqlRule, N / 10));
  }
  for (let round = 0; round < 7; round++) {
    db.regex_clickhouse = [...(db.regex_clickhouse ?? []), timeSync(regexRuleCh, N / 10)];
    db.sql_clickhouse = [...(db.sql_clickhouse ?? []), timeSync(sqlRuleCh, N / 10)];
  }
  for (let round = 0; round < 3; round++) r['json-rules-engine']!.push(await timeAsync(jreEval, 6_000));
  const m = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, median(v)]));
  for (const [k, v] of Object.entries(m)) console.log(`${k.padEnd(18)} ${Math.round(v).toLocaleString('en-US').padStart(14)} evaluations/s (2 conditions each)`);
  console.log(`cel_vs_handwritten=${(m.handwritten! / m.cel!).toFixed(2)}`);
  console.log(`json_rules_engine_vs_handwritten=${(m.handwritten! / m['json-rules-engine']!).toFixed(1)}`);
  const dm = Object.fromEntries(Object.entries(db).map(([k, v]) => [k, median(v)]));
  for (const [k, v] of Object.entries(dm)) console.log(`${(k + ' db rule').padEnd(18)} ${Math.round(v).toLocaleString('en-US').padStart(14)} evaluations/s`);
  console.log(`sql_rule_vs_regex_rule=${(dm.regex! / dm.sql!).toFixed(2)}`);
  console.log(`sql_rule_vs_contains_rule=${(dm.contains! / dm.sql!).toFixed(2)}`);
  console.log(`sql_rule_clickhouse_vs_regex_rule=${(dm.regex_clickhouse! / dm.sql_clickhouse!).toFixed(2)}`);
  console.log(`sql_parse_cold_us=${coldParseUs('postgresql', (k) => `SELECT id, name FROM customers WHERE region = ${k}`).toFixed(0)}`);
  console.log(
    `clickhouse_parse_cold_us=${coldParseUs('clickhouse', (k) => `SELECT toStartOfHour(ts) AS h, uniqExact(uid) FROM events FINAL PREWHERE ts > now() - INTERVAL ${k} DAY WHERE kind == 'click' GROUP BY h SETTINGS max_threads = 2`).toFixed(0)}`,
  );
  for (const [name, mods] of Object.entries(LOADS)) console.log(`sql_grammars_load_ms_${name}=${loadMs(mods).toFixed(0)}`);
  console.log(`dsl_vs_handwritten=${(m.handwritten! / m.dsl!).toFixed(2)}`);
}

await main();
