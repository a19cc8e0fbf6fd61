/**
 * Scoring bench. 1) Non-LLM eval throughput (traces/s) of StewardEngine.evaluate over rule/tripwire/
 * pattern traces, with the decide-only path as the same-run baseline. 2) LLM-bound efficiency: with the
 * stand-in LLM answering in 200 ms over real HTTP, llm-judge throughput relative to the ideal
 * max_in_flight / 0.2 s. Prints `llm_bound_efficiency=<fraction>` last (goal >= 0.8).
 */
import { compileBlueprintSet, createAgentRegistry } from '../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../src/engine/config.js';
import { createDefaultScorerRegistry } from '../../src/engine/scorers/index.js';
import { MemoryStateStore } from '../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../src/engine/trust-debt/index.js';
import type { LlmClient, Trace } from '../../src/engine/types.js';
import { Ed25519Signer } from '../../src/engine/verdict/index.js';
import { OpenAiCompatibleClient } from '../../src/adapters/llm/index.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const BLUEPRINT = `
id: bench/ops@1.0
version: "1.0.0"
description: bench
scope: { agent_tier: [ACL-2] }
tripwires:
  - id: hard_limit
    when: { hook: tool_call, tool: transfer }
    condition: "args.amount <= 100000"
    eval_tier: 0
    on_fail: { decision: halt, reason: limit }
checks:
  - id: cap
    when: { hook: tool_call, tool: transfer }
    rule: { condition: "args.amount <= 10000", on_fail: { decision: block, reason: cap } }
  - id: pii
    when: { hook: tool_call }
    metric:
      name: no_pii
      weight: 0.5
      check: { type: regex, args: { patterns: [{ pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b" }], fields: [args] } }
  - id: tool_safety
    when: { hook: tool_call }
    metric: { name: tool_safety, weight: 0.5, check: { type: rule-based, args: { rules: [cap] } } }
  - id: quality
    when: { hook: answer }
    metric: { name: quality, weight: 1, check: { type: llm, args: { prompt_template: clarity, timeout_ms: 5000 } } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;

function engine(llm?: LlmClient, maxInFlight = 16): StewardEngine {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 'bench.yaml', text: BLUEPRINT }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const set = res.set;
  return new StewardEngine({
    blueprints: () => set,
    registry: createAgentRegistry([{ id: 'b', tenant: 'bench', tier: 'ACL-2', tools: ['transfer'], domains: [], registered: true }]),
    config,
    state: new MemoryStateStore(),
    trustDebt: new MemoryTrustDebtStore(),
    llm,
    signer: Ed25519Signer.ephemeral(),
    scorers: createDefaultScorerRegistry({ maxInFlight, timeoutMs: 5000 }),
    engineVersion: 'bench',
  });
}

const t0 = Date.parse('2025-01-01T00:00:00Z');
const toolTrace = (i: number): Trace => ({
  trace_id: `n-${i}`,
  agent_id: 'b',
  timestamp: new Date(t0 + i * 1000).toISOString(),
  hook: 'tool_call',
  tool: 'transfer',
  args: { amount: (i * 37) % 15000, note: i % 10 === 0 ? 'ssn 123-45-6789' : 'fine' },
});

function countingClient(inner: LlmClient, onCall: () => void): LlmClient {
  return { complete: (req, signal) => (onCall(), inner.complete(req, signal)) };
}

async function rate(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return n / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  // 1) non-LLM throughput (warm up first: JIT, caches)
  const N = Number(process.env.BENCH_TRACES ?? 5000);
  const e1 = engine();
  await rate(500, (i) => e1.evaluate(toolTrace(i), t0 + i * 1000));
  const e2 = engine();
  const decideRate = await rate(N, (i) => e2.decide(toolTrace(i), t0 + i * 1000));
  const e3 = engine();
  const evalRate = await rate(N, (i) => e3.evaluate(toolTrace(i), t0 + i * 1000));
  console.log(`decide_only_traces_per_s=${Math.round(decideRate)}`);
  console.log(`eval_non_llm_traces_per_s=${Math.round(evalRate)}`);
  console.log(`eval_vs_decide_ratio=${(evalRate / decideRate).toFixed(3)}`);

  // 2) LLM-bound: every trace needs one 200 ms judge call; max_in_flight calls may run at once.
  // The stand-in runs in its own process so its request handling does not share our event loop.
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./llm-server-main.ts', import.meta.url)), '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [first] = (await once(child.stdout!, 'data')) as [Buffer];
  const url = first.toString().trim();
  let calls = 0;
  try {
    // max_in_flight defaults to the llm-judge default (16). Each trial pushes `rounds` × max_in_flight
    // traces through decide → score at once; the semaphore keeps max_in_flight judge calls open.
    const maxInFlight = Number(process.env.BENCH_MAX_IN_FLIGHT ?? 16);
    const traces = Number(process.env.BENCH_LLM_TRACES ?? maxInFlight * 20);
    const e = engine(countingClient(new OpenAiCompatibleClient({ baseUrl: url, model: 'bench' }), () => calls++), maxInFlight);
    const answer = (i: number): Trace => ({ trace_id: `l-${i}`, agent_id: 'b', timestamp: new Date(t0).toISOString(), hook: 'answer', content: `answer number ${i}` });
    // warm-up: open the keep-alive connections
    await Promise.all(Array.from({ length: maxInFlight }, (_, i) => e.decide(answer(-i - 1), t0).then((d) => e.score(answer(-i - 1), d, t0))));
    const ideal = maxInFlight / 0.2;
    const trials: number[] = [];
    // Distinct contents per trial so the response cache never answers.
    for (let trial = 0; trial < 3; trial++) {
      calls = 0;
      const id = (i: number) => trial * 1_000_000 + i;
      const start = performance.now();
      const recs = await Promise.all(Array.from({ length: traces }, async (_, i) => e.score(answer(id(i)), await e.decide(answer(id(i)), t0), t0)));
      const secs = (performance.now() - start) / 1000;
      const ok = recs.filter((r) => r.metrics[0]?.status === 'ok').length;
      if (ok !== traces || calls !== traces) throw new Error(`only ${ok}/${traces} judged, ${calls} calls`);
      trials.push(traces / secs / ideal);
      console.log(`trial=${trial + 1} llm_max_in_flight=${maxInFlight} traces=${traces} llm_calls=${calls} elapsed_s=${secs.toFixed(3)} traces_per_s=${(traces / secs).toFixed(1)} ideal_traces_per_s=${ideal}`);
    }
    // Median of three: one noisy trial (the machine is shared) neither sinks nor flatters the result.
    console.log(`llm_bound_efficiency_trials=${trials.map((t) => t.toFixed(3)).join(',')}`);
    console.log(`llm_bound_efficiency=${[...trials].sort((a, b) => a - b)[1]!.toFixed(3)}`);
  } finally {
    child.kill('SIGTERM');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
