/**
 * The end-to-end demo: topics + schemas under a fresh prefix, Steward stages in-process (tripwire,
 * scorer, trust-debt, and the ClickHouse sink when asked), the three sample agents publishing through
 * StewardClient (gated tool calls wait for their decision; outputs are fire-and-forget; the trading bot
 * speaks Avro), and a live summary read from the output topics. Bounded by `durationMs`.
 */
import { KafkaAdapter } from '../adapters/kafka/client.js';
import { ClickHouseStore, sqlString } from '../adapters/clickhouse/client.js';
import { createTopics, topicNames } from '../adapters/kafka/topics.js';
import type { DecisionMessage, TrustDebtMessage, VerdictMessage } from '../contracts/messages.js';
import { registerAll } from '../adapters/kafka/schema-registration.js';
import { OutputDecoder, avroSchemaId } from '../adapters/kafka/output-decoder.js';
import { createRegistry } from '../adapters/kafka/serde.js';
import { startStewardProcess } from '../process/steward-process.js';
import { StewardClient } from '../client/steward-client.js';
import type { StewardConfig } from '../config/steward-config.js';
import type { StageName } from '../process/pipeline.js';
import { INTERVENTIONS, type Intervention } from '../engine/types.js';
import type { Logger } from '../logger.js';
import { DEMO_AGENTS, demoTrace, type DemoAgentId } from './agents.js';
import { playAcmExample, type AcmDemoResult } from './acm-run.js';

export interface DemoOptions {
  durationMs: number;
  /** Traces per second per agent. */
  rate: number;
  withSink: boolean;
  keepTopics: boolean;
  seed: number;
  out: NodeJS.WritableStream;
  summaryEveryMs?: number;
  /** Event-time distance between two traces of one agent (default 3 min). */
  simStepMs?: number;
  /** Also play the ACM refund example run (examples/refund-run) through a tripwire stage (default true). */
  acm?: boolean;
}

interface Tally {
  decisions: Record<Intervention, number>;
  verdicts: Record<Intervention, number>;
  fallbacks: number;
  syncLatency: number[];
  debt: Map<string, { after: number; level: string }>;
  examples: Map<string, string>;
}

const zero = () => Object.fromEntries(INTERVENTIONS.map((i) => [i, 0])) as Record<Intervention, number>;

function render(t: Tally, elapsedS: number, final: boolean): string {
  const lat = [...t.syncLatency].sort((a, b) => a - b);
  const p = (q: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(q * lat.length))].toFixed(1) : '-');
  const row = (name: string, r: Record<Intervention, number>) => `  ${name.padEnd(10)} ${INTERVENTIONS.map((i) => `${i}=${r[i]}`.padEnd(12)).join('')} total=${Object.values(r).reduce((a, b) => a + b, 0)}`;
  const lines = [
    `── ${final ? 'final summary' : 'live summary'} at ${elapsedS.toFixed(0)} s ──`,
    row('decisions', t.decisions),
    row('verdicts', t.verdicts),
    `  sync decide: p50=${p(0.5)} ms p99=${p(0.99)} ms over ${lat.length} calls, governance fallbacks=${t.fallbacks}`,
    `  trust debt: ${[...t.debt].map(([a, d]) => `${a}=${d.after.toFixed(3)} (${d.level})`).join('  ') || '-'}`,
  ];
  if (final && t.examples.size > 0) lines.push('  examples:', ...[...t.examples.values()].map((e) => `    ${e}`));
  return lines.join('\n') + '\n';
}

/** What a run produced, from the Kafka outputs and (with the sink) counted back from ClickHouse. */
export interface DemoResult {
  runId: string;
  decisions: number;
  verdicts: number;
  fallbacks: number;
  clickhouse?: { decisions: number; verdicts: number; ledger: number };
  acm?: AcmDemoResult;
}

const sum = (r: Record<Intervention, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/** Waits (bounded) until the sink has landed what Kafka saw for this run, then reads the counts. */
async function clickhouseCounts(cfg: StewardConfig, runId: string, want: { decisions: number; verdicts: number }): Promise<DemoResult['clickhouse']> {
  const store = new ClickHouseStore(cfg.clickhouse);
  const like = sqlString(`${runId}-%`);
  const read = async () => {
    const n = async (sql: string) => Number((await store.query<{ n: string }>(sql))[0]?.n ?? 0);
    return {
      decisions: await n(`SELECT count() AS n FROM ${store.table('v_decisions')} WHERE trace_id LIKE ${like}`),
      verdicts: await n(`SELECT count() AS n FROM ${store.table('v_verdicts')} WHERE trace_id LIKE ${like}`),
      ledger: await n(`SELECT count() AS n FROM ${store.table('ledger')} WHERE entry_id LIKE ${sqlString(`pd:${runId}-%`)}`),
    };
  };
  try {
    const until = Date.now() + 20_000;
    let c = await read();
    while (Date.now() < until && (c.decisions < want.decisions || c.verdicts < want.verdicts || c.ledger < want.decisions)) {
      await new Promise((r) => setTimeout(r, 500));
      c = await read();
    }
    return c;
  } finally {
    await store.close();
  }
}

export async function runDemo(cfg0: StewardConfig, opts: DemoOptions, logger: Logger): Promise<DemoResult> {
  const runId = `demo-${Date.now().toString(36)}`;
  const cfg: StewardConfig = {
    ...cfg0,
    topics: { ...cfg0.topics, prefix: `steward-${runId}` },
    consumer: { ...cfg0.consumer, groupPrefix: `steward-${runId}` },
    redis: { ...cfg0.redis, keyPrefix: `${cfg0.redis.keyPrefix}${runId}:` },
    observability: { ...cfg0.observability, enabled: cfg0.observability.enabled },
    // The demo's agents run on a simulated clock (hours in a minute), so their timestamps are trusted here.
    limits: { ...cfg0.limits, maxEventTimeSkewMs: null },
  };
  const names = topicNames(cfg.topics.prefix);
  const adapter = new KafkaAdapter(cfg.kafka, logger);
  const admin = await adapter.admin();
  opts.out.write(`steward demo ${runId}: topics ${names.traces} …, blueprints ${cfg.blueprints.dir}; simulated clock ${(opts.simStepMs ?? 180_000) / 60_000} min per agent step\n`);
  await createTopics(admin, names, { partitions: cfg.topics.partitions, replicationFactor: cfg.topics.replicationFactor, replyPartitions: cfg.topics.replyPartitions, replyRetentionMs: 3_600_000 });
  let avro = false;
  if (cfg.schemaRegistryUrl) {
    try {
      await registerAll(cfg.schemaRegistryUrl, cfg.topics.prefix);
      avro = true;
    } catch (e) {
      logger.warn({ err: (e as Error).message }, 'schema registry unavailable: the trading bot publishes JSON instead of Avro');
    }
  }
  const stages: StageName[] = ['tripwire', 'scorer', 'trust-debt', ...(opts.withSink ? (['sink'] as const) : [])];
  const proc = await startStewardProcess(cfg, stages, logger);
  const tally: Tally = { decisions: zero(), verdicts: zero(), fallbacks: 0, syncLatency: [], debt: new Map(), examples: new Map() };

  // Summary reader: everything downstream sees (acgp.decisions / verdicts / trust-debt), deduped by id.
  const seen = new Set<string>();
  const reader = adapter.consumer({ groupId: `${cfg.consumer.groupPrefix}-summary`, maxWaitTimeMs: 200 });
  await reader.subscribe([names.decisions, names.verdicts, names.trustDebt], true);
  // Decisions, verdicts and trust-debt changes may be Avro (topics.avro_outputs).
  const outputs = new OutputDecoder(cfg.schemaRegistryUrl ? createRegistry(cfg.schemaRegistryUrl) : undefined);
  await reader.runBatches(async (b, ctl) => {
    const schemas = await outputs.schemasFor(b.messages.map((m) => m.value));
    for (const m of b.messages) {
      ctl.resolveOffset(m.offset);
      if (!m.value) continue;
      const v = (avroSchemaId(m.value) !== undefined ? schemas.decode(m.topic === names.decisions ? 'decision' : m.topic === names.verdicts ? 'verdict' : 'trustDebt', m.value) : JSON.parse(m.value.toString('utf8'))) as Record<string, unknown>;
      const id = `${m.topic}|${String(v.trace_id ?? v.event_id)}`;
      if (seen.has(id)) continue;
      seen.add(id);
      if (m.topic === names.decisions) {
        const d = v as unknown as DecisionMessage;
        tally.decisions[d.intervention]++;
        if (d.intervention !== 'ok' && !tally.examples.has(`${d.agent_id}:${d.intervention}`)) {
          tally.examples.set(`${d.agent_id}:${d.intervention}`, `${d.agent_id} ${d.intervention} (${d.blueprint}): ${d.reasons[0] ?? ''}`);
        }
      } else if (m.topic === names.verdicts) tally.verdicts[(v as unknown as VerdictMessage).intervention]++;
      else {
        const t = v as unknown as TrustDebtMessage;
        tally.debt.set(t.agent_id, { after: t.after, level: t.level });
      }
    }
  }, { partitionsConcurrently: 1 });

  const clients = new Map<DemoAgentId, StewardClient>(
    DEMO_AGENTS.map((a) => [a, new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, avro: a === 'trader-1' && avro ? { registryUrl: cfg.schemaRegistryUrl! } : undefined, tier: a === 'trader-1' ? 'ACL-3' : 'ACL-2', logger })]),
  );
  await Promise.all([...clients.values()].map((c) => c.connect()));
  const started = Date.now();
  const deadline = started + opts.durationMs;
  const summary = setInterval(() => opts.out.write(render(tally, (Date.now() - started) / 1000, false)), opts.summaryEveryMs ?? 5000);
  const agentLoop = async (agent: DemoAgentId) => {
    const c = clients.get(agent)!;
    for (let i = 0; Date.now() < deadline; i++) {
      const t0 = Date.now();
      // Simulated event time: each agent step is `simStepMs` apart, so a ~minute-long run shows hours of
      // activity (rate limits per hour/day and trust-debt decay behave as they would over that span).
      const trace = demoTrace(agent, i, opts.seed, started + i * (opts.simStepMs ?? 180_000), runId);
      if (trace.hook === 'tool_call') {
        const d = await c.decide(trace, { timeoutMs: 2000 });
        tally.syncLatency.push(Date.now() - t0);
        if (d.fallback) tally.fallbacks++;
      } else await c.publish(trace);
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 / opts.rate - (Date.now() - t0))));
    }
  };
  let result: DemoResult = { runId, decisions: 0, verdicts: 0, fallbacks: 0 };
  try {
    await Promise.all(DEMO_AGENTS.map(agentLoop));
    // Let the asynchronous stages finish the tail before the final summary.
    const settleUntil = Date.now() + 10_000;
    const total = () => Object.values(tally.decisions).reduce((a, b) => a + b, 0);
    let last = -1;
    while (Date.now() < settleUntil && total() !== last) {
      last = total();
      await new Promise((r) => setTimeout(r, 1500));
    }
    clearInterval(summary);
    opts.out.write(render(tally, (Date.now() - started) / 1000, true));
    result = { runId, decisions: sum(tally.decisions), verdicts: sum(tally.verdicts), fallbacks: tally.fallbacks };
    if (opts.withSink) {
      result.clickhouse = await clickhouseCounts(cfg, runId, result);
      const c = result.clickhouse!;
      opts.out.write(
        `  clickhouse ${cfg.clickhouse.database}: ${c.decisions}/${result.decisions} decisions, ${c.verdicts}/${result.verdicts} verdicts, ${c.ledger} ledger entries (v_decisions, v_verdicts, ledger; try \`steward report\`)\n`,
      );
    }
  } finally {
    clearInterval(summary);
    await Promise.all([...clients.values()].map((c) => c.close()));
    await reader.disconnect();
    await proc.stop();
    if (!opts.keepTopics) await admin.deleteTopics(Object.values(names)).catch(() => undefined);
    await admin.disconnect();
  }
  // ACM run governance (docs/acm.md "In the stream"), after the sample agents: its own topics and stages.
  if (opts.acm !== false) result.acm = await playAcmExample(cfg, { demoId: runId, withSink: opts.withSink, keepTopics: opts.keepTopics, out: opts.out }, logger);
  return result;
}
