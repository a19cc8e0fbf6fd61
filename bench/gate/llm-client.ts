/**
 * Microbench of one LLM client's cost per call against the stand-in server in its own process: the direct client
 * (undici on this thread) or the threaded one (llm.thread). Prints wall, process CPU (all threads), this thread's
 * CPU and the server's CPU per call. `BENCH_LLM_THREAD=1` for the threaded client; `BENCH_LLM_JUDGE=1` through the
 * gate's judge (GateJudge: in-flight bound, timeout, answer parsed and validated); `BENCH_LLM_N` calls (20 000),
 * `BENCH_LLM_IN_FLIGHT` (16) at a time, a ~4 KB prompt. Run twice in one process: the first run warms the JIT.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLlmClient, ThreadedLlmClient } from '../../src/adapters/llm/index.js';
import { GateJudge } from '../../src/engine/gate/judge.js';
import { BUILTIN_REASON_CODES } from '../../src/engine/gate/codes.js';

const N = Number(process.env.BENCH_LLM_N ?? 20000);
const IN_FLIGHT = Number(process.env.BENCH_LLM_IN_FLIGHT ?? 16);
const thread = process.env.BENCH_LLM_THREAD === '1';
const viaJudge = process.env.BENCH_LLM_JUDGE === '1';
const JUDGE = JSON.stringify({ quality_score: 0.9, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });

function statCpu(file: string): number {
  const s = readFileSync(file, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../scoring/llm-server-main.ts', import.meta.url)), '0', JUDGE], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
const client = createLlmClient({ baseUrl: line.toString().trim(), model: 'm', thread });
if (client instanceof ThreadedLlmClient) await client.ready();
const prompt = 'x'.repeat(4000);
const judge = new GateJudge(client, IN_FLIGHT);
const allowedCodes = new Set(BUILTIN_REASON_CODES);
const call = viaJudge
  ? async () => {
      const r = await judge.judge({ system: 'judge', prompt, timeoutMs: 30_000, allowedCodes });
      if (!r.ok) throw new Error(r.error.message);
    }
  : () => client.complete({ system: 'judge', prompt, temperature: 0, maxTokens: 1024, timeoutMs: 30_000 });
for (const round of ['warm-up', 'measured']) {
  const c0 = process.cpuUsage();
  const m0 = statCpu('/proc/thread-self/stat');
  const s0 = statCpu(`/proc/${proc.pid}/stat`);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < N) await call();
    }),
  );
  const wall = (performance.now() - t0) / N;
  const c = process.cpuUsage(c0);
  const us = (x: number) => (x * 1e6).toFixed(1);
  console.log(
    `${thread ? 'threaded' : 'direct'}${viaJudge ? ' via the judge' : ''} ${round}: ${us(wall / 1000)} wall, ${us((c.user + c.system) / 1e6 / N)} cpu (main thread ${us((statCpu('/proc/thread-self/stat') - m0) / N)}), server ${us((statCpu(`/proc/${proc.pid}/stat`) - s0) / N)} µs/call`,
  );
}
await client.close?.();
proc.kill('SIGTERM');
