/**
 * The floor of any gate that asks an HTTP judge once per final answer: the gate's own judge request (built by
 * FinalizationGate from the bench's final answer and blueprint, captured once) sent over and over through the
 * production LLM client to the stand-in judge, `inFlight` at a time, with nothing else around it — no Kafka, no
 * Redis, no scan, no events. bench:gate times it in each round next to the tripwire stage
 * (`judge_exchange_alone_vs_tripwire=`, docs/pipeline.md "Gate stage").
 */
import { readFileSync } from 'node:fs';
import { compileBlueprintSet } from '../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../src/engine/config.js';
import { FinalizationGate, MemoryGateJobStore } from '../../src/engine/gate/index.js';
import type { AgentInfo, LlmClient, Trace } from '../../src/engine/types.js';
import type { LlmRequest } from '../../src/engine/ports.js';
import { createLlmClient } from '../../src/adapters/llm/index.js';

/** The request the gate sends its judge for `answer` under the blueprint `id` in `yaml`. */
export async function gateJudgeRequest(yaml: string, id: string, answer: Trace, agent: AgentInfo, judgeAnswer: string): Promise<LlmRequest> {
  const set = compileBlueprintSet([{ file: 'bench.yaml', text: yaml }], { config: defaultEngineConfig() }).set;
  const bp = set?.blueprints.find((b) => b.id === id);
  if (!bp) throw new Error(`bench blueprint ${id} did not compile`);
  let seen: LlmRequest | undefined;
  const llm: LlmClient = {
    complete: (req) => {
      seen ??= req;
      return Promise.resolve({ text: judgeAnswer, model: req.model ?? 'bench-judge', latencyMs: 0 });
    },
  };
  await new FinalizationGate({ llm, jobStore: new MemoryGateJobStore() }).finalize(answer, agent, bp, Date.parse(answer.timestamp), 'floor-0');
  if (!seen) throw new Error('the gate made no judge call for the bench answer');
  return seen;
}

export interface FloorCost {
  wall: number;
  cpu: number;
  main: number;
  judge: number;
}

/** utime + stime in seconds from a /proc stat file (a process's, or a thread's: /proc/thread-self/stat); 0 off Linux. */
export function statCpu(file: string): number {
  try {
    const s = readFileSync(file, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** Seconds per exchange (wall; this process's CPU, its main thread's, the judge server's) over `n` exchanges. */
export async function exchangeFloor(url: string, model: string, req: LlmRequest, n: number, inFlight: number, judgeCpu: () => number): Promise<FloorCost> {
  const client = createLlmClient({ baseUrl: url, model });
  try {
    let next = 0;
    const run = (count: number) =>
      Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next++ < count) await client.complete(req);
        }),
      );
    await run(Math.min(n, 500)); // connections open, code warm
    next = 0;
    const c0 = process.cpuUsage();
    const m0 = statCpu('/proc/thread-self/stat');
    const j0 = judgeCpu();
    const t0 = performance.now();
    await run(n);
    const wall = (performance.now() - t0) / 1000 / n;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1e6 / n, main: (statCpu('/proc/thread-self/stat') - m0) / n, judge: (judgeCpu() - j0) / n };
  } finally {
    await client.close?.();
  }
}
