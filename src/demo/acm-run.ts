/**
 * The demo's ACM part (docs/acm.md "In the stream"): the refund example run (examples/refund-run, plan-A /
 * plan-B, a forbidden branch, a replan, a compensation) and one malformed plan, played through a
 * StewardClient into a tripwire stage (and the scorer and sink, which store the runs' replay records for
 * `steward replay export`) governing runs with the example's blueprints, acm.yaml and verification sheets. Trace and run ids get the demo's id, so repeated demos land new ledger
 * entries. Prints the answers and, with the sink, each run's row of v_acm_runs.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KafkaAdapter } from '../adapters/kafka/client.js';
import { ClickHouseStore, sqlString } from '../adapters/clickhouse/client.js';
import { createTopics, topicNames } from '../adapters/kafka/topics.js';
import { startStewardProcess } from '../process/steward-process.js';
import { StewardClient } from '../client/steward-client.js';
import type { StewardConfig } from '../config/steward-config.js';
import type { StageName } from '../process/pipeline.js';
import { INTERVENTIONS, type Intervention, type Trace } from '../engine/types.js';
import type { Logger } from '../logger.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/refund-run/', import.meta.url));

export interface AcmDemoResult {
  events: number;
  answers: Record<Intervention, number>;
  /** Dead-lettered with their problems (the malformed plan). */
  refused: string[];
  /** v_acm_runs rows of the demo's runs (with the sink). */
  runs?: Record<string, unknown>[];
}

/** The example's traces with the demo's ids, and a malformed plan (a cycle, an edge to a missing task). */
export function acmDemoTraces(demoId: string): Trace[] {
  const lines = readFileSync(`${EXAMPLE}trace.jsonl`, 'utf8').split('\n').filter((l) => l.trim());
  const ts = lines.map((l) => JSON.parse(l) as Trace & { run?: { runId?: string } });
  const bad = { trace_id: 'bad-plan', agent_id: 'refund-agent-1', timestamp: '2025-10-03T10:30:00Z', hook: 'plan', run: { runId: 'run-bad-plan' }, goal: { id: 'BAD' }, selection: { method: 'llm', chosenPlanId: 'p' }, plans: [{ id: 'p', contextRef: 'ctx-2025-10-03-001', tasks: [{ id: 't1' }, { id: 't2' }], edges: [{ from: 't1', to: 't2' }, { from: 't2', to: 't1' }, { from: 't2', to: 'nowhere' }] }] } as unknown as Trace & { run?: { runId?: string } };
  return [...ts.slice(0, 9), bad, ...ts.slice(9)].map((t) => ({ ...t, trace_id: `acm-${demoId}:${t.trace_id}`, ...(t.run?.runId ? { run: { ...t.run, runId: `${demoId}:${t.run.runId}` } } : {}) }));
}

export async function playAcmExample(cfg0: StewardConfig, o: { demoId: string; withSink: boolean; keepTopics: boolean; out: NodeJS.WritableStream }, logger: Logger): Promise<AcmDemoResult> {
  const cfg: StewardConfig = {
    ...cfg0,
    blueprints: { dir: `${EXAMPLE}blueprints`, agents: `${EXAMPLE}blueprints/agents.yaml`, watch: false },
    topics: { ...cfg0.topics, prefix: `${cfg0.topics.prefix}-acm` },
    consumer: { ...cfg0.consumer, groupPrefix: `${cfg0.consumer.groupPrefix}-acm` },
    redis: { ...cfg0.redis, keyPrefix: `${cfg0.redis.keyPrefix}acm:` },
  };
  const names = topicNames(cfg.topics.prefix);
  const adapter = new KafkaAdapter(cfg.kafka, logger);
  const admin = await adapter.admin();
  await createTopics(admin, names, { partitions: cfg.topics.partitions, replicationFactor: cfg.topics.replicationFactor, replyPartitions: cfg.topics.replyPartitions, replyRetentionMs: 3_600_000 });
  // With the sink, the scorer too: the sink joins each run event's pending record and the scorer's answer into the
  // run's replay records (docs/acm.md "In the stream"), which `steward replay export` reads.
  const stages: StageName[] = ['tripwire', ...(o.withSink ? (['scorer', 'sink'] as const) : [])];
  const proc = await startStewardProcess(cfg, stages, logger);
  const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, logger });
  const answers = Object.fromEntries(INTERVENTIONS.map((i) => [i, 0])) as Record<Intervention, number>;
  const refused: string[] = [];
  const traces = acmDemoTraces(o.demoId);
  try {
    for (const t of traces) {
      const d = await client.decide(t, { timeoutMs: 10_000 });
      if (d.rejected) refused.push(`${t.trace_id}: ${d.rejected.code}`);
      else answers[d.intervention]++;
    }
    o.out.write(`  acm: refund example run (examples/refund-run) through the tripwire stage: ${traces.length} events, ${INTERVENTIONS.map((i) => `${i}=${answers[i]}`).join(' ')}; refused: ${refused.join(', ') || 'none'}\n`);
    let runs: Record<string, unknown>[] | undefined;
    if (o.withSink) {
      runs = await acmRuns(cfg, o.demoId, traces);
      for (const r of runs) o.out.write(`  acm run ${String(r.run_id)}: plan ${String(r.plan_id)}, ${String(r.decisions)} decisions (${String(r.blocked)} blocked), ${String(r.branches)} branches (${String(r.forbidden_branches)} forbidden), ${String(r.replans)} replans (v_acm_runs; try \`steward report runs\`)\n`);
    }
    return { events: traces.length, answers, refused, ...(runs ? { runs } : {}) };
  } finally {
    await client.close();
    await proc.stop();
    if (!o.keepTopics) await admin.deleteTopics(Object.values(names)).catch(() => undefined);
    await admin.disconnect();
  }
}

/** Waits (bounded) until every decided event of the demo's runs has its POLICY_DECISION in ClickHouse. */
async function acmRuns(cfg: StewardConfig, demoId: string, traces: Trace[]): Promise<Record<string, unknown>[]> {
  const store = new ClickHouseStore(cfg.clickhouse);
  const want = traces.filter((t) => (t.run as { runId?: string } | undefined)?.runId && !t.trace_id.endsWith(':bad-plan')).length;
  const like = sqlString(`${demoId}:%`);
  const read = () => store.query<Record<string, unknown>>(`SELECT run_id, plan_id, decisions, blocked, branches, forbidden_branches, replans FROM ${store.table('v_acm_runs')} WHERE run_id LIKE ${like} ORDER BY run_id`);
  try {
    const until = Date.now() + 20_000;
    let rows = await read();
    while (Date.now() < until && rows.reduce((n, r) => n + Number(r.decisions), 0) < want) {
      await new Promise((r) => setTimeout(r, 500));
      rows = await read();
    }
    return rows;
  } finally {
    await store.close();
  }
}
