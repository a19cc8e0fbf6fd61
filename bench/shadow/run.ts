/**
 * bench:shadow — the cost of shadow evaluation (docs/rollout.md) on the tripwire stage: the same
 * TripwireProcessor (decode → decide → decision, scoring message and reply outputs) over the same traces,
 * alone and with the rollout hook evaluating a candidate blueprint set in shadow (its decision, the diff and
 * the acgp.shadow-diffs record), in one process and run, alternating rounds. Prints the medians and, last,
 * `shadow_cost_ratio=<with shadow / alone>` (time per trace; goal <= 1.6: the second evaluation costs less
 * than the first, since decoding and the outputs are not repeated).
 */
import { TraceDecoder } from '../../src/adapters/kafka/serde.js';
import { topicNames } from '../../src/adapters/kafka/topics.js';
import type { InMessage } from '../../src/adapters/kafka/client.js';
import { TripwireProcessor } from '../../src/consumers/tripwire.js';
import { compileBlueprintSet, createAgentRegistry, type BlueprintSet } from '../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../src/engine/config.js';
import { ShadowEvaluator, readOnlyTrustDebt } from '../../src/engine/rollout/shadow.js';
import { RolloutStageHook } from '../../src/engine/rollout/stage-hook.js';
import { MemoryStateStore } from '../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../src/engine/trust-debt/index.js';
import { StewardMetrics } from '../../src/observability/metrics.js';

const bp = (version: string, cap: number, limit: number) => `
id: finance/trading_bench@${version}
version: "${version}"
description: "Trading agent (bench)"
scope: { agent_tier: [ACL-3], tools: ["execute_trade", "market_data_api"] }
lists:
  restricted_symbols: [GME, AMC, BBBY]
  trading_venues: [NYSE, NASDAQ, LSE]
tripwires:
  - id: trade_size_limit
    severity: critical
    when: { hook: tool_call, tool: execute_trade }
    condition: "args.trade_value <= ${limit}"
    on_fail: { decision: halt, reason: "Trade exceeds the hard limit" }
  - id: restricted_symbol
    severity: severe
    when: { hook: tool_call, tool: execute_trade }
    condition: "NOT in_denylist(args.symbol, \\"restricted_symbols\\")"
    on_fail: { decision: block, reason: "Symbol is on the restricted list" }
  - id: venue_allowed
    when: { hook: tool_call, tool: execute_trade }
    condition: { any: [ 'in_allowlist(args.venue, "trading_venues")', 'args.venue == "internal_cross"' ] }
    on_fail: { decision: escalate, reason: "Unknown trading venue" }
checks:
  - id: single_trade_volume_cap
    when: { hook: tool_call, tool: execute_trade }
    rule: { condition: "args.trade_value <= ${cap}", on_fail: { decision: block, reason: "Trade value over the single transaction limit" } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;

const config = defaultEngineConfig();
function set(text: string): BlueprintSet {
  const r = compileBlueprintSet([{ file: 'bench.yaml', text }], { config });
  if (!r.set) throw new Error(r.errors.map((e) => e.format()).join('\n'));
  return r.set;
}
const active = set(bp('1.0.0', 50_000, 100_000));
const candidate = set(bp('1.1.0', 40_000, 80_000));
const registry = createAgentRegistry([{ id: 'trader-1', tenant: 'acme', tier: 'ACL-3', tools: ['execute_trade', 'market_data_api'], domains: [], registered: true }]);
const state = new MemoryStateStore();
const debt = new MemoryTrustDebtStore();
const engine = new StewardEngine({ blueprints: () => active, registry, config, state, trustDebt: debt, engineVersion: 'bench' });
// The bench blueprints count no rate windows; the live shadow peeks them in Redis (rollout-peek-state.ts).
const shadowEngine = new StewardEngine({ blueprints: () => candidate, registry, config, state: { get: (ns, k) => state.get(ns, k), hit: async () => 1 }, trustDebt: readOnlyTrustDebt(debt), engineVersion: 'bench' });
const topics = topicNames('bench');
const base = {
  engine,
  decoder: new TraceDecoder({ maxBytes: 1_000_000 }),
  topics,
  metrics: new StewardMetrics(),
  replies: { topic: topics.replies, partitions: 4 },
  maxEventTimeSkewMs: null,
  nowMs: () => 1_767_225_600_000,
};
const alone = new TripwireProcessor(base);
const hook = new RolloutStageHook({ shadow: new ShadowEvaluator({ shadowId: 'bench', engine: shadowEngine, nowMs: () => 1_767_225_600_000 }), shadowTopic: topics.shadowDiffs });
const withShadow = new TripwireProcessor({ ...base, afterDecision: (t, r, ev) => hook.afterDecision(t, r, ev) });

const argsOf = [
  { symbol: 'ACME', trade_value: 10_000, venue: 'NYSE' },
  { symbol: 'ACME', trade_value: 90_000, venue: 'NYSE' },
  { symbol: 'ACME', trade_value: 45_000, venue: 'NASDAQ' },
  { symbol: 'GME', trade_value: 5_000, venue: 'LSE' },
  { symbol: 'INIT', trade_value: 1_000, venue: 'dark_pool' },
  { symbol: 'ACME', trade_value: 200_000, venue: 'internal_cross' },
];
const messages: InMessage[] = Array.from({ length: 600 }, (_, i) => ({
  topic: topics.traces,
  partition: 0,
  offset: String(i),
  key: Buffer.from('trader-1'),
  value: Buffer.from(JSON.stringify({ trace_id: `t-${i}`, agent_id: 'trader-1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'execute_trade', args: argsOf[i % argsOf.length] })),
  headers: {},
  timestampMs: 1_767_225_600_000,
}));

// Correctness first: the shadow never changes the stage's outputs, and it reports the candidate's changes.
let changed = 0;
for (const m of messages.slice(0, argsOf.length)) {
  const a = await alone.process(m);
  const b = await withShadow.process(m);
  const diffs = b.filter((o) => o.topic === topics.shadowDiffs);
  if (diffs.length !== 1 || JSON.stringify(b.filter((o) => o.topic !== topics.shadowDiffs).map((o) => o.topic)) !== JSON.stringify(a.map((o) => o.topic))) throw new Error('shadow changed the stage outputs');
  if ((JSON.parse(diffs[0]!.message.value as string) as { changed: boolean }).changed) changed++;
}
if (changed < 2) throw new Error(`the candidate should change some decisions (changed ${changed})`);

async function msPerTrace(p: TripwireProcessor, rounds: number): Promise<number> {
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) for (const m of messages) await p.process(m);
  return (performance.now() - t0) / (rounds * messages.length);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
await msPerTrace(alone, 10);
await msPerTrace(withShadow, 10);
const a: number[] = [];
const s: number[] = [];
for (let k = 0; k < 9; k++) {
  a.push(await msPerTrace(alone, 5));
  s.push(await msPerTrace(withShadow, 5));
}
console.log(`tripwire_stage_us_per_trace=${(median(a) * 1000).toFixed(2)}`);
console.log(`tripwire_stage_with_shadow_us_per_trace=${(median(s) * 1000).toFixed(2)}`);
console.log(`shadow_cost_ratio=${(median(s) / median(a)).toFixed(3)}`);
