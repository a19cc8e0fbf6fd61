/**
 * bench:dsl — the §9.4.5 dangerous_db_ops invariant and `args.trade_value <= 100000`, over three trace
 * shapes (benign SELECT, DROP TABLE on a non-allowlisted table, a 200,000 trade), evaluated by:
 * our compiled DSL, a hand-written JS function of the same logic (the baseline), @marcbachmann/cel-js
 * and json-rules-engine. All four must agree on every trace before anything is timed.
 * Prints ops/s per engine and `dsl_vs_handwritten=<time ratio>` last (goal <= 2.0).
 * Issue #28: the SQL-aware rule of code/assistant@1.0 (parsed with node-sql-parser, parse cache keyed
 * by the text) against the keyword-regex rule and the plain `contains` rule over the same two database
 * traces: `sql_rule_vs_regex_rule=` and `sql_rule_vs_contains_rule=` (time ratios, goal <= 20).
 */
import { parse as celParse } from '@marcbachmann/cel-js';
import { Engine } from 'json-rules-engine';
import { compileCondition, type DslCompileOptions } from '../../src/engine/dsl/index.js';
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
  for (let round = 0; round < 3; round++) r['json-rules-engine']!.push(await timeAsync(jreEval, 6_000));
  const m = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, median(v)]));
  for (const [k, v] of Object.entries(m)) console.log(`${k.padEnd(18)} ${Math.round(v).toLocaleString('en-US').padStart(14)} evaluations/s (2 conditions each)`);
  console.log(`cel_vs_handwritten=${(m.handwritten! / m.cel!).toFixed(2)}`);
  console.log(`json_rules_engine_vs_handwritten=${(m.handwritten! / m['json-rules-engine']!).toFixed(1)}`);
  const dm = Object.fromEntries(Object.entries(db).map(([k, v]) => [k, median(v)]));
  for (const [k, v] of Object.entries(dm)) console.log(`${(k + ' db rule').padEnd(18)} ${Math.round(v).toLocaleString('en-US').padStart(14)} evaluations/s`);
  console.log(`sql_rule_vs_regex_rule=${(dm.regex! / dm.sql!).toFixed(2)}`);
  console.log(`sql_rule_vs_contains_rule=${(dm.contains! / dm.sql!).toFixed(2)}`);
  console.log(`dsl_vs_handwritten=${(m.handwritten! / m.dsl!).toFixed(2)}`);
}

await main();
