/**
 * bench:soak — a steady mixed load through every stage (tripwire, scorer, trust-debt, gate, sink) on the real
 * Kafka, Redis and ClickHouse of scripts/services.sh, each stage in a process of its own (stage-main.ts, as
 * `steward run --stages X` deploys them), for SOAK_SECONDS (default 60): tool calls of many agents, final answers
 * (the gate, judged by a local OpenAI-protocol server in its own process), and ACM runs (the refund example, one
 * malformed plan each). Every 5 s each stage process reports its RSS and live heap after a forced GC; printed last:
 *   soak_stage_<stage>=          per process: RSS at start (after the warm-up), middle, end and max, its RSS slope,
 *                                live heap start → end and its last-half slope (bounded caches fill early, a leak
 *                                keeps growing), messages processed
 *   soak_rss_max_mb=             the largest RSS of any stage process (goal ≤ 256), and which
 *   soak_rss_slope_mb_per_min=   the steepest stage's least-squares RSS slope after the warm-up (goal: within noise, ≤ 1)
 *   soak_lag_end=                messages the stages' groups were behind when the load stopped
 *   soak_dlq=                    DLQ records by stage and code (the ACM runs' malformed plans are expected)
 *   soak_throughput_end_vs_start=  tripwire messages/s in the last third vs the first third after warm-up
 *   soak_kafka=                  of the tool calls: distinct decisions, verdicts and debt events on Kafka, and records twice
 *   soak_lost=                   of the tool calls produced (goal 0): decisions, verdicts and debt events missing on
 *                                Kafka or written there twice, decisions, verdicts, debt events and POLICY_DECISION
 *                                entries missing in ClickHouse once drained, and ledger entries stored twice
 * SOAK_RATE (default 200) sets messages/s offered; SOAK_AGENTS (default 50) the tool-calling agents;
 * SOAK_HEAP_SNAPSHOTS=<dir> (SOAK_SNAPSHOT_AT) writes heap snapshots of every stage process.
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
import { StageProcess } from './children.js';
import { countTraceRecords } from './count.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const RATE = Number(process.env.SOAK_RATE ?? 200);
const AGENTS = Number(process.env.SOAK_AGENTS ?? 50);
const WARM_S = Math.min(15, Math.max(5, SECONDS / 6));
const RUN = Date.now().toString(36);
const EXAMPLE = fileURLToPath(new URL('../../examples/refund-run/', import.meta.url));
const JUDGE = JSON.stringify({ quality_score: 0.9, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });

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


interface Sample {
  t: number;
  rss: number;
  heap: number;
  processed: number;
}

async function main(): Promise<void> {
  const env = benchProcessEnv();
  const judge = await judgeServer();
  const prefix = `bench-soak-${RUN}`;
  const database = `bench_soak_${RUN}`;
  const raw = {
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
  };
  const cfg = buildConfig(raw, env);
  const topics = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  await createTopics(admin, topics, { partitions: 3, replicationFactor: 1, replyPartitions: 4, replyRetentionMs: 600_000 });
  // One process per stage, as deployed (`steward run --stages X` each): RSS is measured per process.
  const stages = ['tripwire', 'scorer', 'trust-debt', 'gate', 'sink'] as const;
  const procs: StageProcess[] = [];
  const producer = await adapter.producer();
  const store = new ClickHouseStore({ url: cfg.clickhouse.url, database });
  const samples = new Map<string, Sample[]>(stages.map((st) => [st, []]));
  let toolCalls = 0;
  let finals = 0;
  let acmEvents = 0;
  try {
    // The sink first: it creates the database and tables the others' outputs land in.
    for (const st of ['sink', 'tripwire', 'scorer', 'trust-debt', 'gate'] as const) procs.push(await StageProcess.start(st, raw, env));
    let lastDlq: string[] = [];
    // SOAK_HEAP_SNAPSHOTS=<dir>: heap snapshots of every stage process at SOAK_SNAPSHOT_AT seconds (default: after
    // the warm-up) and at the end of the load, to diff what grew (a leak hunt; each pauses its stage for seconds).
    const snapAt = process.env.SOAK_HEAP_SNAPSHOTS ? Number(process.env.SOAK_SNAPSHOT_AT ?? WARM_S) : Infinity;
    let snapped = false;
    const snapshot = async (tag: string) => {
      for (const p of procs) console.error(`heap snapshot ${await p.snapshot(tag)}`);
    };
    const sample = async (t: number) => {
      if (!snapped && t >= snapAt) {
        snapped = true;
        await snapshot('a');
      }
      for (const p of procs) {
        const s = await p.sample();
        samples.get(p.stage)!.push({ t, rss: s.rssMb, heap: s.heapMb, processed: s.processed });
        if (p.stage === 'sink') lastDlq = [];
        lastDlq.push(...s.dlq);
      }
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
    if (snapped) await snapshot('b');
    const lagEnd = await groupLag(cfg.kafka.brokers, prefix);
    // Drain: every tool call's decision, verdict, debt event and ledger entry stored (or 120 s).
    const drainStart = performance.now();
    const like = `'soak-tc-${RUN}-%'`;
    const count = async (sql: string) => Number((await store.query<{ n: string }>(sql).catch(() => [{ n: '0' }]))[0]?.n ?? 0);
    let stored = { decisions: 0, verdicts: 0, debt: 0, ledger: 0, ledgerRows: 0 };
    for (;;) {
      stored = {
        decisions: await count(`SELECT uniqExact(trace_id) AS n FROM ${store.table('v_decisions')} WHERE trace_id LIKE ${like}`),
        verdicts: await count(`SELECT uniqExact(trace_id) AS n FROM ${store.table('v_verdicts')} WHERE trace_id LIKE ${like}`),
        debt: await count(`SELECT uniqExact(trace_id) AS n FROM ${store.table('trust_debt_events')} WHERE trace_id LIKE ${like}`),
        ledger: await count(`SELECT uniqExact(entry_id) AS n FROM ${store.table('ledger')} WHERE entry_id LIKE 'pd:soak-tc-${RUN}-%'`),
        ledgerRows: await count(`SELECT count() AS n FROM ${store.table('ledger')} WHERE entry_id LIKE 'pd:soak-tc-${RUN}-%'`),
      };
      if ((stored.decisions >= toolCalls && stored.verdicts >= toolCalls && stored.debt >= toolCalls && stored.ledger >= toolCalls) || performance.now() - drainStart > 120_000) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const drainS = (performance.now() - drainStart) / 1000;
    await sample(elapsed());
    // What the stages produced on Kafka for the tool calls: one decision, one verdict and one debt event each.
    const kafkaCounts = await countTraceRecords(cfg.kafka.brokers, [topics.decisions, topics.verdicts, topics.trustDebt], `soak-tc-${RUN}-`);
    const k = (t: string) => kafkaCounts.get(t) ?? { distinct: 0, twice: 0 };

    const tw = samples.get('tripwire')!;
    const third = (loadEnd - WARM_S) / 3;
    const rateIn = (a: number, b: number) => {
      const s = tw.filter((x) => x.t >= a && x.t <= b);
      return s.length < 2 ? NaN : (s[s.length - 1].processed - s[0].processed) / (s[s.length - 1].t - s[0].t);
    };
    const first = rateIn(WARM_S, WARM_S + third);
    const last = rateIn(loadEnd - third, loadEnd);
    console.log(`soak_load=${SECONDS}s at ${RATE} msg/s offered: ${toolCalls} tool calls (${AGENTS} agents), ${finals} final answers, ${acmEvents} ACM events (${acmRuns} runs); one process per stage (${stages.join(', ')})`);
    let rssMax = { mb: 0, stage: '' };
    let slopeMax = { v: -Infinity, stage: '' };
    for (const st of stages) {
      const all = samples.get(st)!;
      const after = all.filter((s) => s.t >= WARM_S && s.t <= loadEnd);
      const warm = after[0] ?? all[0];
      const end = all[all.length - 1];
      const mid = after[Math.floor(after.length / 2)] ?? end;
      const sl = slope(after.map((s) => s.t), after.map((s) => s.rss)) * 60;
      const late = after.filter((x) => x.t >= WARM_S + (loadEnd - WARM_S) / 2);
      const heapLate = slope(late.map((x) => x.t), late.map((x) => x.heap)) * 60;
      const mx = Math.max(...all.map((s) => s.rss));
      if (mx > rssMax.mb) rssMax = { mb: mx, stage: st };
      if (sl > slopeMax.v) slopeMax = { v: sl, stage: st };
      console.log(
        `soak_stage_${st.replace('-', '_')}=rss_mb start ${warm.rss.toFixed(0)} (after ${WARM_S}s warm-up), middle ${mid.rss.toFixed(0)}, end ${end.rss.toFixed(0)}, max ${mx.toFixed(0)}; rss slope ${sl.toFixed(2)} MB/min; live heap ${warm.heap.toFixed(1)} → ${end.heap.toFixed(1)} MB (last-half slope ${heapLate.toFixed(2)} MB/min); processed ${end.processed}`,
      );
    }
    console.log(`soak_drain_s=${drainS.toFixed(1)} (of ${toolCalls} tool calls in ClickHouse: ${stored.decisions} decisions, ${stored.verdicts} verdicts, ${stored.debt} debt events, ${stored.ledger} POLICY_DECISION entries in ${stored.ledgerRows} ledger rows)`);
    console.log(`soak_kafka=decisions ${k(topics.decisions).distinct} (+${k(topics.decisions).twice} twice), verdicts ${k(topics.verdicts).distinct} (+${k(topics.verdicts).twice} twice), debt events ${k(topics.trustDebt).distinct} (+${k(topics.trustDebt).twice} twice)`);
    console.log(`soak_rss_max_mb=${rssMax.mb.toFixed(0)} (${rssMax.stage})`);
    console.log(`soak_rss_slope_mb_per_min=${slopeMax.v.toFixed(2)} (${slopeMax.stage}, the steepest stage after warm-up)`);
    console.log(`soak_lag_end=${lagEnd}`);
    console.log(`soak_dlq=${lastDlq.join(',') || 0}`);
    console.log(`soak_throughput_end_vs_start=${(last / first).toFixed(3)} (${first.toFixed(0)} → ${last.toFixed(0)} tripwire msg/s)`);
    // Of the tool calls produced: decisions, verdicts and debt events missing on Kafka or written twice there,
    // and decisions, verdicts, debt events and POLICY_DECISION entries missing in ClickHouse, plus ledger rows twice.
    const kafkaMissing = [topics.decisions, topics.verdicts, topics.trustDebt].reduce((a, t) => a + (toolCalls - k(t).distinct), 0);
    const kafkaTwice = [topics.decisions, topics.verdicts, topics.trustDebt].reduce((a, t) => a + k(t).twice, 0);
    const chMissing = 4 * toolCalls - stored.decisions - stored.verdicts - stored.debt - stored.ledger;
    const chTwice = stored.ledgerRows - stored.ledger;
    console.log(`soak_lost=${kafkaMissing + kafkaTwice + chMissing + chTwice} (kafka missing ${kafkaMissing}, twice ${kafkaTwice}; clickhouse missing ${chMissing}, ledger twice ${chTwice})`);
  } finally {
    await producer.disconnect();
    for (const p of procs.reverse()) await p.stop().catch(() => undefined);
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
