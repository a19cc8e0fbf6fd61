/**
 * bench:tripwire — in-process decisions per second on one core for a finance trading blueprint:
 * agent lookup + blueprint selection + tripwires + rule checks + the result object, over a mix of
 * traces (benign trades, a 200k trade that halts, a 60k trade blocked by a rule, a restricted symbol,
 * market data calls). The blueprint is compiled from YAML by the real blueprint engine
 * (compileBlueprintSet) and cross-checked against a hand-written decision function, which is also the
 * baseline of the ratio. Prints `tripwire_decisions_per_sec=<n>` last (goal >= 500,000).
 */
import { defaultEngineConfig } from '../../src/engine/config.js';
import { compileBlueprintSet, createAgentRegistry } from '../../src/engine/blueprint/index.js';
import { runTripwireStage } from '../../src/engine/tripwires/index.js';
import type { AgentInfo, EvalContext, Intervention, Trace, TripwireStageResult } from '../../src/engine/types.js';

const BLUEPRINT = `
id: finance/trading_bench@1.0
version: "1.0.0"
description: "Trading agent with tier-0 safety tripwires (bench)"
inherits: clarity.baseline@1.0
scope:
  agent_tier: [ACL-3, ACL-4]
  tools: ["execute_trade", "market_data_api"]
lists:
  restricted_symbols: [GME, AMC, BBBY]
  trading_venues: [NYSE, NASDAQ, LSE]
tripwires:
  - id: trade_size_limit
    severity: critical
    when: { hook: tool_call, tool: execute_trade }
    condition: "args.trade_value <= 100000"
    eval_tier: 0
    latency_budget_ms: 50
    on_fail: { decision: halt, reason: "Trade exceeds $100k hard limit" }
  - id: restricted_symbol
    severity: severe
    when: { hook: tool_call, tool: execute_trade }
    condition: "NOT in_denylist(args.symbol, \\"restricted_symbols\\")"
    on_fail: { decision: block, reason: "Symbol is on the restricted list" }
  - id: venue_allowed
    when: { hook: tool_call, tool: execute_trade }
    condition:
      any:
        - in_allowlist(args.venue, "trading_venues")
        - args.venue == "internal_cross"
    on_fail: { decision: escalate, reason: "Unknown trading venue" }
checks:
  - id: single_trade_volume_cap
    when: { hook: tool_call, tool: execute_trade }
    rule:
      condition: "args.trade_value <= 50000"
      on_fail: { decision: block, reason: "Trade value exceeds single transaction limit of $50,000." }
  - id: market_data_scope
    when: { hook: tool_call, tool: market_data_api }
    rule:
      condition: "NOT (args.symbols.length > 50)"
      on_fail: { decision: nudge, reason: "Large market data request" }
`;

const config = defaultEngineConfig();
const compiled = compileBlueprintSet([{ file: 'bench/trading_bench@1.0.yaml', text: BLUEPRINT }], { config });
if (!compiled.set) throw new Error(compiled.errors.map((e) => e.format()).join('\n'));
const set = compiled.set;
const registry = createAgentRegistry([{ id: 'trader-1', tenant: 'acme', tier: 'ACL-3', tools: ['execute_trade', 'market_data_api'], domains: ['production'], registered: true }]);

const mk = (i: number, tool: string, args: Record<string, unknown>): Trace => ({ trace_id: `t-${i}`, agent_id: 'trader-1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool, args });
const traces: Trace[] = [
  mk(0, 'execute_trade', { symbol: 'ACME', trade_value: 10_000, venue: 'NYSE' }),
  mk(1, 'execute_trade', { symbol: 'ACME', trade_value: 200_000, venue: 'NYSE' }),
  mk(2, 'execute_trade', { symbol: 'ACME', trade_value: 60_000, venue: 'NASDAQ' }),
  mk(3, 'execute_trade', { symbol: 'GME', trade_value: 5_000, venue: 'LSE' }),
  mk(4, 'market_data_api', { symbols: ['ACME', 'INIT'] }),
  mk(5, 'execute_trade', { symbol: 'INIT', trade_value: 1_000, venue: 'dark_pool' }),
  mk(6, 'execute_trade', { symbol: 'ACME', trade_value: 49_000, venue: 'internal_cross' }),
  mk(7, 'market_data_api', { symbols: [] }),
];
const EXPECTED: Intervention[] = ['ok', 'halt', 'block', 'block', 'ok', 'escalate', 'ok', 'ok'];

function decide(trace: Trace): TripwireStageResult {
  const agent = registry.lookup(trace.agent_id);
  const bp = set.select(agent, trace);
  const ctx: EvalContext = { trace, agent, trustDebt: 0, nowMs: 0, stateNamespace: `${agent.tenant}:${agent.id}` };
  return runTripwireStage(bp, ctx) as TripwireStageResult;
}

// Baseline: the same policy written by hand, producing the same kind of result object.
const restricted = new Set(['GME', 'AMC', 'BBBY']);
const venues = new Set(['NYSE', 'NASDAQ', 'LSE']);
const agents = new Map<string, AgentInfo>([['trader-1', registry.lookup('trader-1')]]);
function handDecide(trace: Trace): { intervention: Intervention; tripwires: { id: string; fired: boolean }[]; rules: { id: string; passed: boolean }[]; reasons: string[] } {
  const agent = agents.get(trace.agent_id)!;
  const res = { traceId: trace.trace_id, agentId: agent.id, intervention: 'ok' as Intervention, tripwires: [] as { id: string; fired: boolean }[], rules: [] as { id: string; passed: boolean }[], reasons: [] as string[] };
  const args = trace.args as Record<string, unknown>;
  if (trace.hook === 'tool_call' && trace.tool === 'execute_trade') {
    const v = args.trade_value;
    if (!(typeof v === 'number' && v <= 100000)) {
      res.tripwires.push({ id: 'trade_size_limit', fired: true });
      res.reasons.push('Trade exceeds $100k hard limit');
      res.intervention = 'halt';
      return res;
    }
    res.tripwires.push({ id: 'trade_size_limit', fired: false });
    const s = args.symbol;
    const bad = typeof s === 'string' && restricted.has(s);
    res.tripwires.push({ id: 'restricted_symbol', fired: bad });
    if (bad) {
      res.reasons.push('Symbol is on the restricted list');
      res.intervention = 'block';
    }
    const venue = args.venue;
    const venueOk = (typeof venue === 'string' && venues.has(venue)) || venue === 'internal_cross';
    res.tripwires.push({ id: 'venue_allowed', fired: !venueOk });
    if (!venueOk) {
      res.reasons.push('Unknown trading venue');
      if (res.intervention === 'ok') res.intervention = 'escalate';
    }
    const capOk = typeof v === 'number' && v <= 50000;
    res.rules.push({ id: 'single_trade_volume_cap', passed: capOk });
    if (!capOk) {
      res.reasons.push('Trade value exceeds single transaction limit of $50,000.');
      res.intervention = 'block';
    }
  } else if (trace.tool === 'market_data_api') {
    const syms = args.symbols;
    const big = Array.isArray(syms) && syms.length > 50;
    res.rules.push({ id: 'market_data_scope', passed: !big });
    if (big) res.intervention = 'nudge';
  }
  return res;
}

for (let i = 0; i < traces.length; i++) {
  const got = decide(traces[i]!);
  if (got instanceof Promise) throw new Error('the finance blueprint must evaluate synchronously');
  if (got.blueprint !== 'finance/trading_bench@1.0') throw new Error(`selected ${got.blueprint}`);
  if (got.intervention !== EXPECTED[i] || handDecide(traces[i]!).intervention !== EXPECTED[i]) {
    throw new Error(`trace ${i}: stage=${got.intervention} hand=${handDecide(traces[i]!).intervention} expected=${EXPECTED[i]}`);
  }
}

function rate(fn: (t: Trace) => { intervention: Intervention }, n: number): number {
  let sink = 0;
  const start = performance.now();
  for (let k = 0; k < n; k++) sink += fn(traces[k & 7]!).intervention.length;
  const ms = performance.now() - start;
  if (sink === 42) console.log(sink);
  return (n / ms) * 1000;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
rate(decide, 300_000);
rate(handDecide, 300_000);
const stage: number[] = [];
const hand: number[] = [];
for (let r = 0; r < 7; r++) {
  hand.push(rate(handDecide, 1_000_000));
  stage.push(rate(decide, 1_000_000));
}
const s = median(stage);
const h = median(hand);
console.log(`hand-written decisions/s   ${Math.round(h).toLocaleString('en-US')}`);
console.log(`tripwire stage decisions/s ${Math.round(s).toLocaleString('en-US')} (${traces.length} trace shapes, selection + tripwires + rules + result)`);
console.log(`stage_vs_handwritten=${(h / s).toFixed(2)}`);
console.log(`tripwire_decisions_per_sec=${Math.round(s)}`);
