/**
 * The gate engine's own CPU per final answer, without Kafka, Redis or HTTP (docs/pipeline.md "The gate's own
 * cost"): FinalizationGate.finalize with a judge answering at once, over a job store that keeps each job as
 * JSON text the way the Redis store does (parse on read, stringify of the envelope on write), and the events
 * and ledger draft stringified as the gate stage does. A quiet, low-noise reading for A/B runs of the gate's
 * per-answer work; bench:gate measures the stage.
 *
 *   npx tsx bench/gate/engine.ts            BENCH_GATE_ENGINE_N answers per round (default 20 000), 3 rounds after a warm-up
 */
import { compileBlueprintSet } from '../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../src/engine/config.js';
import { FinalizationGate, MemoryGateJobStore } from '../../src/engine/gate/index.js';
import type { GateJobKey, GateJobState, GateJobStore } from '../../src/engine/gate/types.js';
import type { AgentInfo, LlmClient, Trace } from '../../src/engine/types.js';

const N = Number(process.env.BENCH_GATE_ENGINE_N ?? 20_000);
const IN_FLIGHT = 16;

const set = compileBlueprintSet([{ file: 'bench.yaml', text: 'id: bench/gate@1.0\nversion: "1.0.0"\ndescription: bench\nfinalization_gate:\n  prompt: B\n' }], { config: defaultEngineConfig() }).set;
const bp = set!.blueprints.find((b) => b.id === 'bench/gate@1.0')!;
const agent: AgentInfo = { id: 'coder-1', tenant: 'bench', tier: 'ACL-2', tools: [], domains: [], registered: true };
const JUDGE = JSON.stringify({ quality_score: 0.9, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });
const llm: LlmClient = { complete: (req) => Promise.resolve({ text: JUDGE, model: req.model ?? 'bench-judge', latencyMs: 0 }) };

/** Jobs as JSON text in an envelope, as src/adapters/redis/cas-json-store.ts keeps them. */
class JsonTextStore implements GateJobStore {
  readonly texts = new Map<string, string>();
  /** The agent index (D45) in memory: these stores are about the jobs' JSON. */
  private readonly agents = new MemoryGateJobStore();
  getAgent: GateJobStore['getAgent'] = (k, nowMs) => this.agents.getAgent(k, nowMs);
  updateAgent: GateJobStore['updateAgent'] = (k, nowMs, fn) => this.agents.updateAgent(k, nowMs, fn);
  bytes = 0;
  async get(k: GateJobKey): Promise<GateJobState | undefined> {
    const t = this.texts.get(k.jobId);
    return t === undefined ? undefined : (JSON.parse(t) as { value: GateJobState }).value;
  }
  async update(k: GateJobKey, nowMs: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState> {
    const next = fn(await this.get(k));
    const t = JSON.stringify({ v: 1, updated_ms: nowMs, value: next });
    this.bytes += t.length;
    this.texts.set(k.jobId, t);
    return next;
  }
}

const store = new JsonTextStore();
const gate = new FinalizationGate({ llm, jobStore: store });
const finalAnswer = (i: number): Trace => ({
  trace_id: `fa-${i}`,
  agent_id: 'coder-1',
  timestamp: '2026-01-01T00:00:00Z',
  hook: 'final_answer',
  job_id: `job-${i}`,
  goal: 'Explain how the request loop hands work to the scheduler.',
  intent_id: 'SYSTEM_CONTROL_FLOW',
  draft_answer: 'The loop reads a request, validates it, and hands a job to the scheduler, which runs it on a worker.',
});

/** CPU µs per answer over `n` answers of distinct jobs, IN_FLIGHT at a time. */
async function round(base: number, n: number): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i += IN_FLIGHT) {
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async (_, j) => {
        const o = await gate.finalize(finalAnswer(base + i + j), agent, bp, 1.7e12 + i, `e-${base + i + j}`);
        return JSON.stringify(o.events.final_alignment_judge_result) + JSON.stringify(o.events.finalization_outcome) + JSON.stringify(o.ledger);
      }),
    );
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

await round(0, N); // warm-up
const rounds: string[] = [];
store.bytes = 0;
for (let k = 1; k <= 3; k++) {
  store.texts.clear();
  rounds.push((await round(k * 10_000_000, N)).toFixed(2));
}
console.log(`gate_engine_cpu_us_per_answer=${rounds.join(' ')} (3 rounds of ${N}); job_state_bytes_per_answer=${Math.round(store.bytes / (3 * N))}`);
