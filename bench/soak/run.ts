/**
 * bench:soak — a steady mixed load through every stage (tripwire, scorer, trust-debt, gate, sink) on the real
 * Kafka, Redis and ClickHouse of scripts/services.sh, in this one process, for SOAK_SECONDS (default 60):
 * tool calls of many agents, final answers (the gate, judged by a local OpenAI-protocol server in its own
 * process), and ACM runs (the refund example, one malformed plan each). Samples RSS and the live heap (after a
 * forced GC) every 5 s and prints, last:
 *   soak_rss_max_mb=             largest RSS of the process (all stages together)
 *   soak_rss_slope_mb_per_min=   least-squares RSS slope after the warm-up (goal: within noise, ≤ 1)
 *   soak_heap_end_vs_warm_mb=    live heap at the end minus after the warm-up (a leak grows it; so do bounded caches
 *                                while they fill: soak_heap_slope_last_half_mb_per_min= tells them apart on long runs)
 *   soak_lag_end=                messages the stages' groups were behind when the load stopped
 *   soak_dlq=                    DLQ records by stage and code (the ACM runs' malformed plans are expected)
 *   soak_throughput_end_vs_start=  tripwire messages/s in the last third vs the first third after warm-up
 *   soak_lost=                   of the tool calls produced: decisions, verdicts and POLICY_DECISION ledger entries
 *                                missing in ClickHouse once drained, plus ledger entries stored twice (goal 0)
 * SOAK_RATE (default 200) sets messages/s offered; SOAK_AGENTS (default 50) the tool-calling agents.
 */
import { benchProcessEnv } from '../sink/services-env.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { ClickHouseStore } from '../../src/adapters/clickhouse/client.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { acmDemoTraces } from '../../src/demo/acm-run.js';
import type { Trace } from '../../src/engine/types.js';
import { createLogger } from '../../src/logger.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import { bootstrapEngine } from '../../src/process/engine-runtime.js';
import { startPipeline, type StageName } from '../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../src/process/sink-stage.js';
import { ledgerSignerFor } from '../../src/process/steward-process.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const RATE = Number(process.env.SOAK_RATE ?? 200);
const AGENTS = Number(process.env.SOAK_AGENTS ?? 50);
const WARM_S = Math.min(15, Math.max(5, SECONDS / 6));
const RUN = Date.now().toString(36);
const EXAMPLE = fileURLToPath(new URL('../../examples/refund-run/', import.meta.url));
const JUDGE = JSON.stringify({ quality_score: 0.9, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });
const gc = (globalThis as { gc?: () => void }).gc;

function blueprintDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'steward-soak-'));
  for (const f of ['acm.yaml', 'refund.verify.yaml', 'refund_run@1.0.yaml']) copyFileSync(join(EXAMPLE, 'blueprints', f), join(dir, f));
  writeFileSync(
    join(dir, 'gated.yaml'),
    `id: soak/gated@1.0
version: "1.0.0"
description: soak agents with a finalization gate
scope: { agent_tier: [ACL-3] }
finalization_gate: { enabled: true, max_retries: 2, strictness: medium }
checks:
  - id: no_rm
    when: { hook: tool_call, tool: shell }
    rule: { condition: 'NOT (args.command contains "rm -rf")', on_fail: { decision: block, reason: destructive } }
  - id: refund_cap
    when: { hook: tool_call, tool: issue_refund }
    rule: { condition: 'args.amount <= 500', on_fail: { decision: flag, reason: large refund } }
`,
  );
  const coders = Array.from({ length: AGENTS }, (_, i) => `  - { id: soak-${i}, tenant: bench, tier: ACL-3, tools: [read_file, shell, issue_refund] }`);
  const refund = ['  - { id: refund-agent-1, tenant: acme, tier: ACL-2, tools: [fetch_order, compute_refund, assess_risk, create_refund_txn, notify_customer, manual_review], domains: [production] }', '  - { id: alice@example.com, tenant: acme, tier: ACL-1, tools: [], domains: [production] }'];
  writeFileSync(join(dir, 'agents.yaml'), ['agents:', ...coders, ...refund].join('\n') + '\n');
  return dir;
}

const T0 = Date.UTC(2026, 5, 1);
function toolCall(i: number): Trace {
  const kind = i % 10;
  return {
    trace_id: `soak-tc-${RUN}-${i}`,
    agent_id: `soak-${i % AGENTS}`,
    timestamp: new Date(T0 + i * 50).toISOString(),
    hook: 'tool_call',
    tool: kind < 5 ? 'read_file' : kind < 8 ? 'shell' : 'issue_refund',
    args: kind < 5 ? { path: `src/f${i % 97}.ts` } : kind < 8 ? { command: kind === 7 && i % 30 === 7 ? 'rm -rf /tmp/x' : 'ls -la' } : { amount: (i % 9) * 100, order_id: `O${i}` },
    content: `step ${i}: working on the task`,
  };
}
function finalAnswer(i: number): Trace {
  return {
    trace_id: `soak-fa-${RUN}-${i}`,
    agent_id: `soak-${i % AGENTS}`,
    timestamp: new Date(T0 + i * 50).toISOString(),
    hook: 'final_answer',
    job_id: `job-${RUN}-${i}`,
    goal: 'Explain how the request loop hands work to the scheduler.',
    intent_id: 'SYSTEM_CONTROL_FLOW',
    draft_answer: 'The loop reads a request, validates it, and hands a job to the scheduler, which runs it on a worker.',
  } as Trace;
}

async function judgeServer(): Promise<{ url: string; stop(): void }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../scoring/llm-server-main.ts', import.meta.url)), '0', JUDGE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(proc.stdout!, 'data')) as [Buffer];
  return { url: line.toString().trim(), stop: () => proc.kill('SIGTERM') };
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function counter(metrics: StewardMetrics, name: 'messages' | 'dlq', stage?: string): Promise<number> {
  const v = (await metrics[name].get()).values;
  return v.filter((x) => stage === undefined || x.labels.stage === stage).reduce((a, x) => a + x.value, 0);
}

async function main(): Promise<void> {
  const env = benchProcessEnv();
  const judge = await judgeServer();
  const prefix = `bench-soak-${RUN}`;
  const database = `bench_soak_${RUN}`;
  const cfg = buildConfig(
    {
      topics: { prefix, partitions: 3, reply_partitions: 4 },
      consumer: { group_prefix: prefix },
      limits: { partitions_concurrently: 3, chunk_size: 500, max_event_time_skew_ms: null },
      observability: { enabled: false },
      blueprints: { dir: blueprintDir(), watch: false },
      redis: { key_prefix: `${prefix}:` },
      clickhouse: { database },
      trust_debt: { audit_sweep_interval_ms: 0 },
      llm: { base_url: judge.url, model: 'soak-judge', max_in_flight: 16, timeout_ms: 30_000 },
      signing: { allow_ephemeral: true },
    },
    env,
  );
  const topics = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  await createTopics(admin, topics, { partitions: 3, replicationFactor: 1, replyPartitions: 4, replyRetentionMs: 600_000 });
  const logger = createLogger({ level: process.env.SOAK_LOG ?? 'silent' });
  const stages: StageName[] = ['tripwire', 'scorer', 'trust-debt', 'gate', 'sink'];
  const metrics = new StewardMetrics();
  const rt = await bootstrapEngine(cfg, stages, logger, metrics);
  const pipe = await startPipeline(cfg, stages, { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSignerFor(cfg, logger), metrics) }, { logger, metrics });
  const producer = await adapter.producer();
  const store = new ClickHouseStore({ url: cfg.clickhouse.url, database });
  const samples: { t: number; rss: number; heap: number; tw: number }[] = [];
  let toolCalls = 0;
  let finals = 0;
  let acmEvents = 0;
  try {
    // SOAK_HEAP_SNAPSHOTS=<dir>: heap snapshots at SOAK_SNAPSHOT_AT seconds (default: after the warm-up) and at
    // the end of the load, to diff what grew (a leak hunt; each takes seconds and pauses the stages).
    const snapDir = process.env.SOAK_HEAP_SNAPSHOTS;
    const snapAt = Number(process.env.SOAK_SNAPSHOT_AT ?? WARM_S);
    let snapped = false;
    const snapshot = async (tag: string) => {
      if (!snapDir) return;
      gc?.();
      const { writeHeapSnapshot } = await import('node:v8');
      console.error(`heap snapshot ${writeHeapSnapshot(join(snapDir, `soak-${RUN}-${tag}.heapsnapshot`))}`);
    };
    const sample = async (t: number) => {
      if (!snapped && t >= snapAt) {
        snapped = true;
        await snapshot('a');
      }
      gc?.();
      const m = process.memoryUsage();
      samples.push({ t, rss: m.rss / 2 ** 20, heap: m.heapUsed / 2 ** 20, tw: await counter(metrics, 'messages', 'tripwire') });
    };
    const start = performance.now();
    const elapsed = () => (performance.now() - start) / 1000;
    let nextSample = 0;
    let acmQueue: Trace[] = [];
    let acmRuns = 0;
    let i = 0;
    // 10 ticks a second, RATE/10 messages each: 70 % tool calls, 20 % final answers, 10 % ACM events (in run order).
    while (elapsed() < SECONDS) {
      const tickStart = performance.now();
      const messages: { key: string; value: string }[] = [];
      for (let k = 0; k < RATE / 10; k++, i++) {
        const r = i % 10;
        let t: Trace;
        if (r < 7) {
          t = toolCall(toolCalls++);
        } else if (r < 9) {
          t = finalAnswer(finals++);
        } else {
          if (acmQueue.length === 0) acmQueue = acmDemoTraces(`soak-${RUN}-${acmRuns++}`);
          t = acmQueue.shift()!;
          acmEvents++;
        }
        messages.push({ key: t.agent_id, value: JSON.stringify(t) });
      }
      await producer.send([{ topic: topics.traces, messages }]);
      if (elapsed() >= nextSample) {
        await sample(elapsed());
        nextSample += 5;
      }
      const wait = 100 - (performance.now() - tickStart);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const loadEnd = elapsed();
    await sample(loadEnd);
    await snapshot('b');
    const lagEnd = await groupLag(cfg.kafka.brokers, prefix);
    // Drain: every tool call's decision, verdict and ledger entry stored (or 60 s).
    const drainStart = performance.now();
    const like = `'soak-tc-${RUN}-%'`;
    const count = async (sql: string) => Number((await store.query<{ n: string }>(sql).catch(() => [{ n: '0' }]))[0]?.n ?? 0);
    let stored = { decisions: 0, verdicts: 0, ledger: 0, ledgerRows: 0 };
    for (;;) {
      stored = {
        decisions: await count(`SELECT uniqExact(trace_id) AS n FROM ${store.table('v_decisions')} WHERE trace_id LIKE ${like}`),
        verdicts: await count(`SELECT uniqExact(trace_id) AS n FROM ${store.table('v_verdicts')} WHERE trace_id LIKE ${like}`),
        ledger: await count(`SELECT uniqExact(entry_id) AS n FROM ${store.table('ledger')} WHERE entry_id LIKE 'pd:soak-tc-${RUN}-%'`),
        ledgerRows: await count(`SELECT count() AS n FROM ${store.table('ledger')} WHERE entry_id LIKE 'pd:soak-tc-${RUN}-%'`),
      };
      if ((stored.decisions >= toolCalls && stored.verdicts >= toolCalls && stored.ledger >= toolCalls) || performance.now() - drainStart > 60_000) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const drainS = (performance.now() - drainStart) / 1000;
    await sample(elapsed());

    const after = samples.filter((s) => s.t >= WARM_S && s.t <= loadEnd);
    const warm = after[0] ?? samples[0];
    const end = samples[samples.length - 1];
    const third = (loadEnd - WARM_S) / 3;
    const rateIn = (a: number, b: number) => {
      const s = samples.filter((x) => x.t >= a && x.t <= b);
      return s.length < 2 ? NaN : (s[s.length - 1].tw - s[0].tw) / (s[s.length - 1].t - s[0].t);
    };
    const first = rateIn(WARM_S, WARM_S + third);
    const last = rateIn(loadEnd - third, loadEnd);
    const dlq = (await metrics.dlq.get()).values.filter((v) => v.value > 0).map((v) => `${v.labels.stage}/${v.labels.code}:${v.value}`);
    const mid = after[Math.floor(after.length / 2)] ?? end;
    console.log(`soak_load=${SECONDS}s at ${RATE} msg/s offered: ${toolCalls} tool calls (${AGENTS} agents), ${finals} final answers, ${acmEvents} ACM events (${acmRuns} runs); one process, stages ${stages.join(', ')}`);
    console.log(`soak_rss_mb=start ${warm.rss.toFixed(0)} (after ${WARM_S}s warm-up), middle ${mid.rss.toFixed(0)}, end ${end.rss.toFixed(0)}; live heap ${warm.heap.toFixed(1)} → ${end.heap.toFixed(1)} MB${gc ? '' : ' (no --expose-gc: heap not collected before sampling)'}`);
    const processed = await Promise.all(stages.map(async (st) => `${st} ${await counter(metrics, 'messages', st)}`));
    console.log(`soak_processed=${processed.join(', ')}`);
    console.log(`soak_drain_s=${drainS.toFixed(1)} (of ${toolCalls} tool calls: ${stored.decisions} decisions, ${stored.verdicts} verdicts, ${stored.ledger} POLICY_DECISION entries in ${stored.ledgerRows} ledger rows)`);
    console.log(`soak_rss_max_mb=${Math.max(...samples.map((s) => s.rss)).toFixed(0)}`);
    console.log(`soak_rss_slope_mb_per_min=${(slope(after.map((s) => s.t), after.map((s) => s.rss)) * 60).toFixed(2)}`);
    console.log(`soak_heap_end_vs_warm_mb=${(end.heap - warm.heap).toFixed(1)}`);
    // Bounded caches (the gate's last-read job states: 10 000) fill during the first minutes; a leak keeps growing.
    const late = after.filter((x) => x.t >= WARM_S + (loadEnd - WARM_S) / 2);
    console.log(`soak_heap_slope_last_half_mb_per_min=${(slope(late.map((x) => x.t), late.map((x) => x.heap)) * 60).toFixed(2)} (all after warm-up: ${(slope(after.map((x) => x.t), after.map((x) => x.heap)) * 60).toFixed(2)})`);
    console.log(`soak_lag_end=${lagEnd}`);
    console.log(`soak_dlq=${dlq.join(',') || 0}`);
    console.log(`soak_throughput_end_vs_start=${(last / first).toFixed(3)} (${first.toFixed(0)} → ${last.toFixed(0)} tripwire msg/s)`);
    // Missing decisions, verdicts or ledger entries of the tool calls, plus ledger entries written twice.
    console.log(`soak_lost=${3 * toolCalls - stored.decisions - stored.verdicts - stored.ledger + (stored.ledgerRows - stored.ledger)}`);
  } finally {
    await producer.disconnect();
    await pipe.stop();
    await rt.close();
    await store.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await store.close();
    await admin.deleteTopics(Object.values(topics)).catch(() => undefined);
    await admin.disconnect();
    judge.stop();
  }
  process.exit(0);
}

/** Messages the stage groups of this run (`<prefix>-…`) are behind, summed over their topics and partitions. */
async function groupLag(brokers: string[], prefix: string): Promise<number> {
  const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { groups } = await admin.listGroups();
    let lag = 0;
    for (const g of groups.filter((x) => x.groupId.startsWith(prefix))) {
      for (const t of await admin.fetchOffsets({ groupId: g.groupId })) {
        const high = await admin.fetchTopicOffsets(t.topic);
        for (const p of t.partitions) {
          const h = Number(high.find((x) => x.partition === p.partition)?.high ?? 0);
          if (Number(p.offset) >= 0) lag += Math.max(0, h - Number(p.offset));
        }
      }
    }
    return lag;
  } finally {
    await admin.disconnect();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
