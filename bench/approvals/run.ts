/**
 * bench:approvals — what issue #25 adds to the decision and load paths, as ratios against a baseline
 * measured in the same run (alternating rounds; the machine is shared, so read them as noisy):
 *   approval_check_vs_tripwire_stage=  decide work with the `requires_approval` check of the blueprint's
 *                                      tools (approvalFor) over the tripwire stage alone, same blueprint and traces
 *                                      (a quarter of the calls need approval: their request id is hashed);
 *   approval_check_no_hit_vs_tripwire_stage=  the same over calls none of which needs approval;
 *   locked_rules_compile_vs_checks=    compiling a blueprint whose rules come from a .rules.lock over the same
 *                                      conditions written as checks (the lock's hash check, re-compile and re-run of its tests; both
 *                                      sides also compile the built-in baseline they inherit).
 */
import { performance } from 'node:perf_hooks';
import { approvalFor } from '../../src/engine/approvals/policy.js';
import { compileBlueprintSet, createAgentRegistry } from '../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../src/engine/config.js';
import { ruleTextHash } from '../../src/engine/rules/lock.js';
import type { RuleLockEntry } from '../../src/engine/rules/types.js';
import { runTripwireStage } from '../../src/engine/tripwires/index.js';
import type { EvalContext, Trace } from '../../src/engine/types.js';

const config = defaultEngineConfig();
const HEAD = 'version: "1.0.0"\ndescription: bench\n';
const CHECKS = `checks:
  - { id: cap, when: { tool: process_refund }, rule: { condition: "args.amount <= 5000", on_fail: { decision: block, reason: cap } } }
`;
const TOOLS = `tools:
  - { id: process_refund, requires_approval: "args.amount > 500", approval: { timeout: 1h, role: supervisor } }
  - { id: wire_transfer, requires_approval: "args.amount > 0 AND args.currency != 'USD'" }
`;
const bpSet = compileBlueprintSet([{ file: 'bench/a.yaml', text: `id: bench/a@1.0\n${HEAD}${CHECKS}${TOOLS}` }], { config });
if (!bpSet.set) throw new Error(bpSet.errors.map((e) => e.format()).join('\n'));
const set = bpSet.set;
const registry = createAgentRegistry([{ id: 'ag', tenant: 'acme', tier: 'ACL-2', tools: ['process_refund', 'wire_transfer'], domains: [], registered: true }]);
const mk = (i: number, tool: string, args: Record<string, unknown>): Trace => ({ trace_id: `t-${i}`, agent_id: 'ag', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool, args }) as Trace;
const traces = [mk(0, 'process_refund', { amount: 100 }), mk(1, 'process_refund', { amount: 900 }), mk(2, 'wire_transfer', { amount: 10, currency: 'USD' }), mk(3, 'lookup', {})];
// Calls none of which needs approval: the check's cost on ordinary traffic.
const noHit = [mk(0, 'process_refund', { amount: 100 }), mk(1, 'process_refund', { amount: 400 }), mk(2, 'wire_transfer', { amount: 10, currency: 'USD' }), mk(3, 'lookup', {})];

function round(n: number, withApproval: boolean, traces: Trace[], expectHits: number): number {
  const t0 = performance.now();
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const trace = traces[i & 3]!;
    const agent = registry.lookup(trace.agent_id);
    const bp = set.select(agent, trace);
    const ctx: EvalContext = { trace, agent, trustDebt: 0, nowMs: 0, stateNamespace: 'acme:ag' };
    const r = runTripwireStage(bp, ctx, {}) as unknown as { intervention?: string };
    if (withApproval && approvalFor(bp.approvals, ctx, trace.trace_id)) hits++;
    if (r === undefined) throw new Error('no result');
  }
  if (withApproval && hits !== n * expectHits) throw new Error(`expected ${n * expectHits} approvals, got ${hits}`);
  return performance.now() - t0;
}

const RULES = Array.from({ length: 20 }, (_, i) => ({ id: `r${i}`, text: `Refunds over ${i * 100} need approval`, dsl: `args.amount <= ${i * 100}` }));
const ruleText = `id: bench/r@1.0\n${HEAD}${CHECKS}rules:\n${RULES.map((r) => `  - { id: ${r.id}, text: "${r.text}", when: { tool: process_refund } }`).join('\n')}\n`;
const checkText = `id: bench/r@1.0\n${HEAD}${CHECKS}${RULES.map((r) => `  - { id: ${r.id}, when: { tool: process_refund }, rule: { condition: "${r.dsl}", on_fail: { decision: block, reason: x } } }`).join('\n')}\n`;
// Each entry carries one failing and one passing case: the loader re-runs them (review finding 5), so the
// locked side's cost includes that re-verification, as in production.
const lockTests = (i: number): RuleLockEntry['tests'] => [
  { source: 'llm', trace: { tool: 'process_refund', args: { amount: i * 100 + 1 } }, expect: 'fail' },
  { source: 'llm', trace: { tool: 'process_refund', args: { amount: i * 100 } }, expect: 'pass' },
];
const lock = { version: 1 as const, blueprint: 'bench/r@1.0', rules: RULES.map((r, i): RuleLockEntry => ({ id: r.id, text_sha256: ruleTextHash(r.text), model: 'm', kind: 'condition', dsl: r.dsl, tests: lockTests(i), outcome: 'mechanical' })) };
function compileRound(n: number, rules: boolean): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const r = rules
      ? compileBlueprintSet([{ file: 'r.yaml', text: ruleText }], { config, sidecars: new Map([['r.yaml', { lock }]]) })
      : compileBlueprintSet([{ file: 'r.yaml', text: checkText }], { config });
    if (!r.set || r.warnings.length) throw new Error(`bench blueprint did not compile cleanly: ${[...r.errors, ...r.warnings].map((e) => e.format()).join('; ')}`);
  }
  return performance.now() - t0;
}

const N = 200_000;
round(N, true, traces, 0.25);
round(N, false, traces, 0);
let base = 0;
let withAp = 0;
let baseNo = 0;
let withNo = 0;
for (let k = 0; k < 6; k++) {
  base += round(N, false, traces, 0);
  withAp += round(N, true, traces, 0.25);
  baseNo += round(N, false, noHit, 0);
  withNo += round(N, true, noHit, 0);
}
compileRound(20, true);
compileRound(20, false);
let cBase = 0;
let cRules = 0;
for (let k = 0; k < 6; k++) {
  cBase += compileRound(40, false);
  cRules += compileRound(40, true);
}
console.log(`tripwire_stage_ns_per_decision=${((base / (6 * N)) * 1e6).toFixed(0)}`);
console.log(`approval_check_vs_tripwire_stage=${(withAp / base).toFixed(3)}`);
console.log(`approval_check_no_hit_vs_tripwire_stage=${(withNo / baseNo).toFixed(3)}`);
console.log(`locked_rules_compile_vs_checks=${(cRules / cBase).toFixed(3)}`);
