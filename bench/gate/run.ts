/**
 * bench:gate — the finalization gate as a full stage on the real Kafka and Redis of scripts/services.sh.
 *  1. Cost per final answer of the gate stage (acgp.finalize → tier 1 → tier 2 → judge over HTTP → reply,
 *     events, ledger draft; job state read and written in Redis) with a judge that answers at once, against
 *     the tripwire stage's cost per trace (acgp.traces → decide with Redis → decision + scoring record) over
 *     the same agents in the same run. Both are wall time per message with a pre-filled topic.
 *     BENCH_GATE_ROUNDS (default 3) pairs of the two phases run back to back; the ratio printed is the median of
 *     the pairs' ratios (the machine is shared: one pair alone swings by 2x).
 *  2. Judge-bound efficiency: with the judge answering in 200 ms, the gate's throughput against the ideal
 *     llm.max_in_flight / 0.2 s (judge calls are bounded in flight; everything else should hide behind them).
 * Prints `gate_overhead_vs_tripwire=<ratio>` (goal <= 1.5) and `judge_bound_efficiency=<fraction>` (goal >= 0.8) last.
 */
import { benchProcessEnv } from '../sink/services-env.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createRedis } from '../../src/adapters/redis/client.js';
import { createTopics, topicNames, type TopicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig, type StewardConfig } from '../../src/config/steward-config.js';
import { finalizeJson } from '../../src/consumers/finalize-message.js';
import { bootstrapEngine } from '../../src/process/engine-runtime.js';
import { startPipeline, type StageName } from '../../src/process/pipeline.js';
import { createLogger } from '../../src/logger.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import type { LlmClient, Trace } from '../../src/engine/types.js';
import { exchangeFloor, gateJudgeRequest, statCpu, type FloorCost } from './exchange-floor.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const N = Number(process.env.BENCH_GATE_N ?? 3000);
const SLOW_N = Number(process.env.BENCH_GATE_SLOW_N ?? 400);
const IN_FLIGHT = Number(process.env.BENCH_GATE_IN_FLIGHT ?? 16);
const PARTITIONS = 3;
const AGENTS = 30;
const RUN = Date.now().toString(36);

const JUDGE = JSON.stringify({ quality_score: 0.9, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });

const env = benchProcessEnv;

const BLUEPRINT = `id: bench/gated@1.0
version: "1.0.0"
description: bench agent with a finalization gate
scope: { agent_tier: [ACL-2] }
finalization_gate: { enabled: true, max_retries: 2, strictness: medium }
guardrails:
  - { id: read_before_test, tier: 2, workflow: { steps: [read_file, run_tests] }, when: { intent_id: CHANGE_IMPLEMENTATION } }
checks:
  - id: no_rm
    when: { hook: tool_call, tool: shell }
    rule: { condition: 'NOT (args.command contains "rm -rf")', on_fail: { decision: block, reason: destructive } }
`;

function blueprintDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'steward-bench-gate-'));
  writeFileSync(join(dir, 'gated.yaml'), BLUEPRINT);
  writeFileSync(join(dir, 'agents.yaml'), ['agents:', ...Array.from({ length: AGENTS }, (_, i) => `  - { id: coder-${i}, tenant: bench, tier: ACL-2, tools: [read_file, run_tests, shell] }`)].join('\n') + '\n');
  return dir;
}

const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
const toolCall = (i: number): Trace => ({ trace_id: `tc-${RUN}-${i}`, agent_id: `coder-${i % AGENTS}`, timestamp: at(i), hook: 'tool_call', tool: i % 2 ? 'read_file' : 'shell', args: { path: 'src/app.ts', command: 'ls' } });
const finalAnswer = (i: number, tag: string): Trace => ({
  trace_id: `fa-${tag}-${RUN}-${i}`,
  agent_id: `coder-${i % AGENTS}`,
  timestamp: at(i),
  hook: 'final_answer',
  job_id: `job-${tag}-${i}`,
  goal: 'Explain how the request loop hands work to the scheduler.',
  intent_id: 'SYSTEM_CONTROL_FLOW',
  draft_answer: 'The loop reads a request, validates it, and hands a job to the scheduler, which runs it on a worker.',
});

async function fill(kafka: Kafka, topic: string, messages: { key: string; value: string }[]): Promise<void> {
  // Idempotent: a produce retried under load must not put a message in twice (a duplicated final answer is
  // answered from its job state without a judge call, which flattered the judge-bound phase; seen at load 10+:
  // 835 tool calls processed from a fill of 500).
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  for (let i = 0; i < messages.length; i += 1000) await p.send({ topic, messages: messages.slice(i, i + 1000) });
  await p.disconnect();
}

async function processed(metrics: StewardMetrics, stage: string, n: number): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const v = (await metrics.messages.get()).values.filter((x) => x.labels.stage === stage).reduce((a, x) => a + x.value, 0);
    if (v >= n) return;
    if (performance.now() - t0 > 300_000) throw new Error(`${stage}: timed out at ${v}/${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface JudgeServer {
  url: string;
  /** CPU seconds the judge server's process has used so far (all its threads; /proc, 10 ms ticks). */
  cpu(): number;
  stop(): void;
}

async function judgeServer(delayMs: number): Promise<JudgeServer> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../scoring/llm-server-main.ts', import.meta.url)), String(delayMs), JUDGE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
  return { url: line.toString().trim(), cpu: () => statCpu(`/proc/${proc.pid}/stat`), stop: () => proc.kill('SIGTERM') };
}


interface Cost {
  /** Wall seconds per message. */
  wall: number;
  /** CPU seconds of this process (the stage runs in it; all its threads) per message. */
  cpu: number;
  /** CPU seconds of this process's main thread alone per message (the rest: libuv, GC and worker threads). */
  main: number;
  /** CPU seconds of the judge server's process per message (the gate phases; it shares the machine's cores). */
  judge: number;
}

/** Wall and CPU seconds per message of `stage` over `n` messages already waiting in its input topic. */
/**
 * BENCH_GATE_JUDGE=inproc: the gate phases' judge is an in-process LlmClient that answers at once (no HTTP, no
 * judge server): the gate's cost with the exchange taken away entirely — the floor for moving the exchange off the
 * stage's thread. The 200 ms phase still uses the server.
 */
const inprocJudge: LlmClient | undefined =
  process.env.BENCH_GATE_JUDGE === 'inproc' ? { complete: (req) => Promise.resolve({ text: JUDGE, model: req.model ?? 'bench-judge', latencyMs: 0 }) } : undefined;

async function timeStage(cfg: StewardConfig, stage: StageName, n: number, judge: JudgeServer, profileOut?: string, llm?: LlmClient): Promise<Cost> {
  const logger = createLogger({ level: 'silent' });
  const rt = await bootstrapEngine(cfg, [stage], logger, undefined, { llm });
  const metrics = new StewardMetrics();
  // A CPU profile of the measured phase alone (setup excluded).
  const out = profileOut;
  const prof = out ? new Session() : undefined;
  if (prof) {
    prof.connect();
    await prof.post('Profiler.enable');
    await prof.post('Profiler.setSamplingInterval', { interval: 200 });
    await prof.post('Profiler.start');
  }
  const c0 = process.cpuUsage();
  const m0 = statCpu('/proc/thread-self/stat');
  const j0 = judge.cpu();
  const t0 = performance.now();
  const pipe = await startPipeline(cfg, [stage], rt.deps, { logger, metrics });
  await processed(metrics, stage, n);
  const s = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const main = statCpu('/proc/thread-self/stat') - m0;
  const judged = judge.cpu() - j0;
  if (prof && out) {
    const { profile } = await prof.post('Profiler.stop');
    writeFileSync(out, JSON.stringify(profile));
    prof.disconnect();
  }
  await pipe.stop();
  await rt.close();
  return { wall: s / n, cpu: (c.user + c.system) / 1e6 / n, main: main / n, judge: judged / n };
}

async function phase(e: Record<string, string>, name: string, judge: JudgeServer, fillWith: (t: TopicNames, kafka: Kafka) => Promise<void>, stage: StageName, n: number, profileOut?: string, llm?: LlmClient): Promise<Cost> {
  const prefix = `bench-gate-${name}-${RUN}`;
  const cfg = buildConfig(
    {
      topics: { prefix, partitions: PARTITIONS, reply_partitions: 4 },
      consumer: { group_prefix: prefix },
      limits: { partitions_concurrently: PARTITIONS, chunk_size: 500, max_event_time_skew_ms: null },
      observability: { enabled: false },
      blueprints: { dir: blueprintDir(), watch: false },
      redis: { key_prefix: `${prefix}:` },
      llm: { base_url: judge.url, model: 'bench-judge', max_in_flight: IN_FLIGHT, timeout_ms: 30_000 },
    },
    e,
  );
  const topics = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  await createTopics(admin, topics, { partitions: PARTITIONS, replicationFactor: 1, replyPartitions: 4, replyRetentionMs: 600_000 });
  const kafka = new Kafka({ brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  try {
    await fillWith(topics, kafka);
    return await timeStage(cfg, stage, n, judge, profileOut, llm);
  } finally {
    await admin.deleteTopics(Object.values(topics)).catch(() => undefined);
    await admin.disconnect();
    await dropKeys(cfg.redis.url, cfg.redis.keyPrefix);
  }
}

/** The phase's Redis keys (job states, trust debt, rate windows: ~2 KB per answer, 24 h TTL) go with its topics. */
async function dropKeys(url: string, prefix: string): Promise<void> {
  const redis = createRedis(url);
  try {
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) if (keys.length) await redis.unlink(...keys);
  } catch {
    // best effort: the keys expire anyway
  } finally {
    redis.disconnect();
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const us = (c: Cost) => `${(c.wall * 1e6).toFixed(1)} wall, ${(c.cpu * 1e6).toFixed(1)} cpu (main thread ${(c.main * 1e6).toFixed(0)})`;
const judgeUs = (c: Cost) => `judge server ${(c.judge * 1e6).toFixed(0)} cpu`;

async function main(): Promise<void> {
  const e = env();
  const fast = await judgeServer(0);
  // The machine is shared and noisy: ROUNDS pairs of (tripwire, gate) phases back to back, each pair's ratio
  // against its own tripwire phase, the median printed as the result.
  const rounds = Math.max(1, Number(process.env.BENCH_GATE_ROUNDS ?? 3));
  const pairs: { tripwire: Cost; gate: Cost; floor?: FloorCost; load: string }[] = [];
  // The floor of any per-answer HTTP judge: the gate's own judge request, sent N times through the production
  // client to the same stand-in, nothing else (bench/gate/exchange-floor.ts). BENCH_GATE_FLOOR=0 skips it.
  const floorOn = process.env.BENCH_GATE_FLOOR !== '0' && !inprocJudge;
  const judgeReq = floorOn ? await gateJudgeRequest(BLUEPRINT, 'bench/gated@1.0', finalAnswer(0, 'floor'), { id: 'coder-0', tenant: 'bench', tier: 'ACL-2', tools: ['read_file', 'run_tests', 'shell'], domains: [], registered: true }, JUDGE) : undefined;
  try {
    // BENCH_GATE_PROFILE=1: only gate phases, a warm-up one and a measured one (run under --cpu-prof, or with
    // BENCH_GATE_PROFILE_OUT=file.cpuprofile for a profile of the measured gate phase alone, setup excluded).
    const only = process.env.BENCH_GATE_PROFILE === '1';
    for (let r = 0; r < (only ? 2 : rounds); r++) {
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      const tripwire = only ? { wall: 1, cpu: 1, main: 1, judge: 0 } : await phase(e, `tw${r}`, fast, (t, k) => fill(k, t.traces, Array.from({ length: N }, (_, i) => toolCall(i)).map((x) => ({ key: x.agent_id, value: JSON.stringify(x) }))), 'tripwire', N);
      // the second gate phase: JIT-warm like the stage in a running process
      const profileOut = r === 1 ? process.env.BENCH_GATE_PROFILE_OUT : undefined;
      const gate = await phase(e, `gate${r}`, fast, (t, k) => fill(k, t.finalize, Array.from({ length: N }, (_, i) => finalAnswer(i, `f${r}`)).map((x) => ({ key: x.agent_id, value: finalizeJson(JSON.stringify(x), Date.parse(x.timestamp), `${x.trace_id}#b`, undefined) }))), 'gate', N, profileOut, inprocJudge);
      const floor = judgeReq && !only ? await exchangeFloor(fast.url, 'bench-judge', judgeReq, N, IN_FLIGHT, fast.cpu) : undefined;
      pairs.push({ tripwire, gate, floor, load });
    }
  } finally {
    fast.stop();
  }
  if (process.env.BENCH_GATE_PROFILE === '1') {
    console.log(`gate_stage_us_per_final_answer=${us(pairs[1]!.gate)}, ${judgeUs(pairs[1]!.gate)} (warm-up phase: ${us(pairs[0]!.gate)}, ${judgeUs(pairs[0]!.gate)})`);
    process.exit(0);
  }
  const slow = await judgeServer(200);
  let slowPer: number;
  try {
    slowPer = (await phase(e, 'slow', slow, (t, k) => fill(k, t.finalize, Array.from({ length: SLOW_N }, (_, i) => finalAnswer(i, 's')).map((x) => ({ key: x.agent_id, value: finalizeJson(JSON.stringify(x), Date.parse(x.timestamp), `${x.trace_id}#b`, undefined) }))), 'gate', SLOW_N)).wall;
  } finally {
    slow.stop();
  }
  const ideal = IN_FLIGHT / 0.2;
  pairs.forEach((p, r) => console.log(`round ${r + 1} (load ${p.load}): tripwire ${us(p.tripwire)} µs/trace; gate ${us(p.gate)} µs/answer, ${judgeUs(p.gate)} µs/answer; ratio ${(p.gate.wall / p.tripwire.wall).toFixed(2)} wall, ${(p.gate.cpu / p.tripwire.cpu).toFixed(2)} cpu${p.floor ? `; judge exchange alone ${us(p.floor)} µs/answer, ${judgeUs(p.floor)}, ${(p.floor.wall / p.tripwire.wall).toFixed(2)} of the tripwire` : ''}`));
  const mid = (f: (p: (typeof pairs)[number]) => number) => median(pairs.map(f));
  console.log(`tripwire_stage_us_per_trace=${(mid((p) => p.tripwire.wall) * 1e6).toFixed(1)} wall, ${(mid((p) => p.tripwire.cpu) * 1e6).toFixed(1)} cpu (median of ${pairs.length})`);
  console.log(`gate_stage_us_per_final_answer=${(mid((p) => p.gate.wall) * 1e6).toFixed(1)} wall, ${(mid((p) => p.gate.cpu) * 1e6).toFixed(1)} cpu (median; judge answers at once, over HTTP, in its own process); judge server ${(mid((p) => p.gate.judge) * 1e6).toFixed(0)} cpu`);
  const floors = pairs.filter((p) => p.floor);
  if (floors.length) console.log(`judge_exchange_alone_vs_tripwire=${median(floors.map((p) => p.floor!.wall / p.tripwire.wall)).toFixed(2)} (the gate's judge request ${judgeReq!.prompt.length + (judgeReq!.system?.length ?? 0)} chars through the production client, ${IN_FLIGHT} in flight, nothing else; median of ${floors.length})`);
  console.log(`gate_with_200ms_judge_per_sec=${(1 / slowPer).toFixed(1)} (ideal ${ideal} = max_in_flight ${IN_FLIGHT} / 0.2 s)`);
  console.log(`gate_cpu_vs_tripwire=${mid((p) => p.gate.cpu / p.tripwire.cpu).toFixed(2)}`);
  console.log(`gate_overhead_vs_tripwire=${mid((p) => p.gate.wall / p.tripwire.wall).toFixed(2)}`);
  console.log(`judge_bound_efficiency=${(1 / slowPer / ideal).toFixed(3)}`);
  process.exit(0);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
