// The trace stream and blueprint of the redis-cluster suite's decision tests (batched-state, two-stages).
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Trace } from '../../../src/engine/types.js';

/** Latency budgets of a minute: a slow Redis under load never turns a decision into a timeout fallback. */
export const TEST_TIERS = { 'ACL-2': { latency_budget_ms: { typical: 60_000, max: 60_000 } } };

export const BLUEPRINT = `id: test/batched@1.0
version: "1.0.0"
description: "batched state equivalence"
scope:
  agent_tier: [ACL-2]
  tools: ["act"]
tripwires:
  - id: too_big
    severity: critical
    when: { hook: "tool_call", tool: "act" }
    condition: "args.amount <= 900"
    latency_budget_ms: 60000
    on_fail: { decision: halt, reason: "amount above 900" }
  - id: agent_rate
    severity: standard
    when: { hook: "tool_call", tool: "act" }
    condition: NOT exceeds_rate(agent_id, 3, "10s")
    eval_tier: 1
    requires_state: true
    latency_budget_ms: 60000
    on_fail: { decision: block, reason: "more than 3 in 10 s" }
  - id: kind_rate
    severity: standard
    when: { hook: "tool_call", tool: "act" }
    condition: NOT exceeds_rate(args.kind, 2, "5s")
    eval_tier: 1
    requires_state: true
    latency_budget_ms: 60000
    on_fail: { decision: escalate, reason: "more than 2 of a kind in 5 s" }
`;
export const AGENTS = Array.from({ length: 16 }, (_, i) => `ag-${i}`);
/** The blueprint directory (bp/) and agents.yaml of the suite. */
export const dir = mkdtempSync(join(tmpdir(), 'steward-batched-'));
mkdirSync(join(dir, 'bp'));
writeFileSync(join(dir, 'bp', 'batched.yaml'), BLUEPRINT);
writeFileSync(join(dir, 'agents.yaml'), ['agents:', ...AGENTS.map((a) => `  - { id: ${a}, tenant: acme, tier: ACL-2, tools: [act], domains: [production] }`)].join('\n') + '\n');

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 16 agents × 30 traces in stream order; each agent's traces ~0.7-2.5 s apart in event time. */
export function stream(seed: number): { trace: Trace; at: number }[] {
  const r = rng(seed);
  const clock = AGENTS.map(() => Date.UTC(2026, 0, 1));
  const out: { trace: Trace; at: number }[] = [];
  for (let i = 0; i < AGENTS.length * 30; i++) {
    const a = Math.floor(r() * AGENTS.length);
    clock[a] += 700 + Math.floor(r() * 1800);
    const trace = { trace_id: `t-${seed}-${i}`, agent_id: AGENTS[a]!, timestamp: new Date(clock[a]!).toISOString(), hook: 'tool_call', tool: 'act', args: { amount: r() < 0.2 ? 1000 : 100, kind: `k${Math.floor(r() * 3)}` } } as unknown as Trace;
    out.push({ trace, at: clock[a]! });
  }
  return out;
}

