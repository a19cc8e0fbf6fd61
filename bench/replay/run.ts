/**
 * bench:replay — `steward replay verify` of a 10,000-event run against `steward eval` of the same
 * events, both in this process on this machine (docs/acm.md "Performance"). The run: a context packet, a
 * plan of 400 chained tasks with guards, and per task task.pre, 22 tool calls, task.post and the branch.
 * Prints the timings, the same ratio over CPU time (`replay_verify_vs_eval_cpu=`, steadier on a loaded box)
 * and, last, `replay_verify_vs_eval=<ratio>` of wall times (goal ≤ 1.5).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { runEval } from '../../src/cli/commands/eval.js';
import { readBundleDir } from '../../src/cli/commands/replay.js';
import { verifyReplayBundle } from '../../src/engine/acm/index.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const TASKS = Math.max(2, Math.round(EVENTS / 25));
// context packet + plan + per task (task.pre, task.post) + a branch between tasks; tool calls fill the rest.
const TOOL_CALLS = Math.max(0, EVENTS - 2 - 2 * TASKS - (TASKS - 1));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BLUEPRINTS = join(dirname(fileURLToPath(import.meta.url)), '../../examples/refund-run/blueprints');
const RUN = 'bench-run-1';

function traces(): string[] {
  const out: string[] = [];
  let n = 0;
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const ev = (hook: string, f: Record<string, unknown>) =>
    out.push(JSON.stringify({ trace_id: `b-${++n}`, agent_id: 'refund-agent-1', timestamp: new Date(t0 + n * 10).toISOString(), hook, run: { engine: 'bench', runId: RUN }, ...f }));
  ev('context.packet', { context: { id: 'ctx-bench', sources: ['kb-snap://bench-1'], facts: { region: 'EU' } } });
  const tasks = Array.from({ length: TASKS }, (_, i) => ({ id: `t${i}`, capability: i % 2 ? 'fetch_order' : 'assess_risk' }));
  const edges = tasks.slice(1).map((t, i) => ({ from: `t${i}`, to: t.id, guard: `$t${i}.ok == true && context.facts.region == 'EU'` }));
  ev('plan', { goal: { id: 'G-bench' }, plans: [{ id: 'plan-A', contextRef: 'ctx-bench', tasks, edges }], selection: { method: 'policy', chosenPlanId: 'plan-A' } });
  const plan = { id: 'plan-A', contextRef: 'ctx-bench' };
  for (let i = 0; i < TASKS; i++) {
    const task = { id: `t${i}`, capability: tasks[i]!.capability, input: { i } };
    ev('task.pre', { task, plan, metrics: { cost_usd: 0.01 } });
    const calls = Math.floor(TOOL_CALLS / TASKS) + (i < TOOL_CALLS % TASKS ? 1 : 0);
    for (let k = 0; k < calls; k++) ev('tool_call', { tool: 'fetch_order', args: { orderId: `O-${i}-${k}` }, task_id: `t${i}` });
    ev('task.post', { task, plan, output: { ok: true, n: i }, metrics: { cost_usd: 0.02 } });
    if (i + 1 < TASKS) ev('branch', { from: `t${i}`, to: `t${i + 1}` });
  }
  return out;
}

/** CPU time (user + system, ms) of this process since `from`: less disturbed than wall time by other load on the box. */
const cpuMs = (from: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
};
let lastCpuMs = 0;

async function evalOnce(lines: string[], bundles?: string): Promise<number> {
  const file = join(tmpdir(), `bench-replay-${process.pid}.jsonl`);
  writeFileSync(file, lines.join('\n') + '\n');
  const c = process.cpuUsage();
  const t = performance.now();
  const code = await runEval(
    { blueprints: BLUEPRINTS, input: file, ...(bundles ? { bundles } : {}) },
    { input: Readable.from([lines.join('\n') + '\n']), out: () => undefined, err: () => undefined, stderrIsTty: false, llm: null },
  );
  const ms = performance.now() - t;
  lastCpuMs = cpuMs(c);
  rmSync(file, { force: true });
  if (code !== 0) throw new Error(`eval exited ${code}`);
  return ms;
}

async function main(): Promise<void> {
  const lines = traces();
  const dir = mkdtempSync(join(tmpdir(), 'bench-replay-'));
  try {
    await evalOnce(lines.slice(0, 500)); // warm-up (JIT, schema compile)
    const withBundles = await evalOnce(lines, dir);
    const evalMs: number[] = [];
    const verifyMs: number[] = [];
    const evalCpu: number[] = [];
    const verifyCpu: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      evalMs.push(await evalOnce(lines));
      evalCpu.push(lastCpuMs);
      const c = process.cpuUsage();
      const t = performance.now();
      const problems = await verifyReplayBundle(await readBundleDir(join(dir, RUN)));
      verifyMs.push(performance.now() - t);
      verifyCpu.push(cpuMs(c));
      if (problems.length > 0) throw new Error(`the bench bundle does not verify: ${problems.slice(0, 3).map((p) => `${p.path}: ${p.code}: ${p.message}`).join('; ')}`);
    }
    const e = Math.min(...evalMs);
    const v = Math.min(...verifyMs);
    console.log(`events=${lines.length} tasks=${TASKS}`);
    console.log(`eval_ms=${e.toFixed(0)} (best of ${ROUNDS})`);
    console.log(`eval_with_bundles_ms=${withBundles.toFixed(0)}`);
    console.log(`replay_verify_ms=${v.toFixed(0)} (best of ${ROUNDS})`);
    // The same ratio over CPU time (best of each): on a shared box wall time swings with others' load.
    console.log(`eval_cpu_ms=${Math.min(...evalCpu).toFixed(0)} replay_verify_cpu_ms=${Math.min(...verifyCpu).toFixed(0)}`);
    console.log(`replay_verify_vs_eval_cpu=${(Math.min(...verifyCpu) / Math.min(...evalCpu)).toFixed(2)}`);
    console.log(`replay_verify_vs_eval=${(v / e).toFixed(2)}`);
  } finally {
    if (process.env.BENCH_KEEP) console.log(`kept ${dir}`); else rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
