// Shared helpers of the pipeline integration tests: unique topic prefix per test, config pointing at the
// real services, collectors that read output topics from the beginning, and a small deterministic engine
// for tests that exercise the stream mechanics rather than policy.
import { KafkaAdapter, type InMessage, type StewardConsumer } from '../../../src/adapters/kafka/client.js';
import { createTopics, topicNames, type TopicNames } from '../../../src/adapters/kafka/topics.js';
import { buildConfig, type StewardConfig } from '../../../src/config/steward-config.js';
import type { DecideScoreEngine } from '../../../src/consumers/common-engine.js';
import type { TrustDebtStoreLike, TrustDebtEventLike, TrustDebtChangeLike } from '../../../src/consumers/trust-debt.js';
import type { Trace } from '../../../src/engine/types.js';
import { createLogger } from '../../../src/logger.js';
import { services, uniqueName, deleteSubjects } from '../setup/helpers.js';

export const quietLogger = () => createLogger({ level: process.env.STEWARD_TEST_LOG ?? 'silent' });

export function pipelineConfig(prefix: string, raw: Record<string, any> = {}): StewardConfig {
  const s = services();
  return buildConfig(
    {
      topics: { prefix, partitions: 3, reply_partitions: 4 },
      consumer: { group_prefix: prefix, session_timeout_ms: 6000, auto_commit_interval_ms: 200 },
      limits: { max_trace_bytes: 16384, chunk_size: 200, partitions_concurrently: 3 },
      observability: { enabled: false },
      ...raw,
    },
    { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, REDIS_URL: s.redisUrl, CLICKHOUSE_URL: s.clickhouseUrl },
  );
}

export interface PipelineEnv {
  prefix: string;
  cfg: StewardConfig;
  topics: TopicNames;
  adapter: KafkaAdapter;
}

export async function withPipelineEnv<T>(name: string, fn: (env: PipelineEnv) => Promise<T>, raw: Record<string, any> = {}): Promise<T> {
  const prefix = uniqueName(name);
  const cfg = pipelineConfig(prefix, raw);
  const topics = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  await createTopics(admin, topics, { partitions: cfg.topics.partitions, replicationFactor: 1, replyPartitions: cfg.topics.replyPartitions, replyRetentionMs: 600_000 });
  try {
    return await fn({ prefix, cfg, topics, adapter });
  } finally {
    await admin.deleteTopics(Object.values(topics)).catch(() => undefined);
    await admin.disconnect();
    await deleteSubjects(Object.values(topics).map((t) => `${t}-value`)).catch(() => undefined);
  }
}

/** Reads topics from the beginning into memory until closed. */
export class Collector {
  readonly messages: InMessage[] = [];
  private consumer?: StewardConsumer;
  constructor(private readonly adapter: KafkaAdapter, private readonly topics: string[]) {}
  async start(): Promise<this> {
    const c = this.adapter.consumer({ groupId: uniqueName('collector'), maxWaitTimeMs: 100 });
    this.consumer = c;
    await c.subscribe(this.topics, true);
    await c.runBatches(async (b, ctl) => {
      for (const m of b.messages) {
        this.messages.push(m);
        ctl.resolveOffset(m.offset);
      }
    });
    return this;
  }
  on(topic: string): InMessage[] {
    return this.messages.filter((m) => m.topic === topic);
  }
  json<T = any>(topic: string): T[] {
    return this.on(topic).map((m) => JSON.parse(m.value!.toString('utf8')) as T);
  }
  /** Latest message per id (dedupe by trace_id / event_id). */
  byId<T = any>(topic: string, idField = 'trace_id'): Map<string, T> {
    const out = new Map<string, T>();
    for (const v of this.json<any>(topic)) out.set(v[idField], v);
    return out;
  }
  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }
}

/**
 * A deterministic engine for stream-mechanics tests: halt on tool `rm_rf`, block when args.amount > 1000,
 * flag when content mentions "password", ok otherwise; score() adds a CTQ of 0.9 (0.3 for flagged traces → escalate).
 */
export class TestEngine implements DecideScoreEngine {
  decided = 0;
  scored = 0;
  failOn?: (t: Trace) => boolean;
  async decide(trace: Trace, _now: number): Promise<unknown> {
    this.decided++;
    if (this.failOn?.(trace)) throw new Error(`engine failure on ${trace.trace_id}`);
    const amount = Number((trace.args as { amount?: number } | undefined)?.amount ?? 0);
    const halted = trace.tool === 'rm_rf';
    const intervention = halted ? 'halt' : amount > 1000 ? 'block' : typeof trace.content === 'string' && trace.content.includes('password') ? 'flag' : 'ok';
    return {
      tenant: 'acme',
      blueprint: 'test/bp@1.0',
      intervention,
      stage: halted ? 'tripwire' : intervention === 'ok' ? 'none' : 'rule',
      halted,
      reasons: intervention === 'ok' ? [] : [`test ${intervention}`],
      severity: halted ? 'critical' : undefined,
      tripwires: [{ id: 'no_rm', fired: halted }],
      rules: [{ id: 'amount_cap', passed: amount <= 1000 }],
      latencyMs: 0.1,
    };
  }
  async score(trace: Trace, decision: any, _now: number): Promise<unknown> {
    this.scored++;
    const flagged = decision.intervention === 'flag';
    const ctq = flagged ? 0.3 : 0.9;
    const intervention = flagged ? 'escalate' : decision.intervention;
    return {
      intervention,
      stage: flagged ? 'ctq' : decision.stage,
      ctq,
      risk: 1 - ctq,
      metrics: [{ name: 'clarity', score: ctq, weight: 1, confidence: 0.8, scorer: 'rule-based', status: 'ok' }],
      verdict: { version: 'pvs-1', approved: intervention === 'ok', reasoning: 'test', policy_violations: [], confidence_score: 0.8, metadata: { engine: 'steward', engine_version: 'test', latency_ms: 0 } },
      trace_id: trace.trace_id,
    };
  }
}

const WEIGHT: Record<string, number> = { ok: 0, nudge: 0.02, flag: 0.05, escalate: 0, block: 0.15, halt: 0.5 };

/** In-process trust-debt store with the contract's idempotency (by event id); used where Redis is not the subject. */
export class MapTrustDebtStore implements TrustDebtStoreLike {
  readonly debt = new Map<string, number>();
  private readonly seen = new Map<string, TrustDebtChangeLike>();
  async apply(ev: TrustDebtEventLike): Promise<TrustDebtChangeLike> {
    const prev = this.seen.get(ev.eventId);
    if (prev) return { ...prev, duplicate: true };
    const k = `${ev.tenant}:${ev.agentId}`;
    const before = this.debt.get(k) ?? 0;
    const after = Math.min(1, before + (ev.kind === 'intervention' ? (WEIGHT[ev.intervention ?? 'ok'] ?? 0) : -(ev.credit ?? 0.1)));
    this.debt.set(k, after);
    const c: TrustDebtChangeLike = { eventId: ev.eventId, tenant: ev.tenant, agentId: ev.agentId, atMs: ev.atMs, cause: ev.intervention ?? ev.kind, before, after, level: 'normal', previousLevel: 'normal', crossings: [], duplicate: false };
    this.seen.set(ev.eventId, c);
    return c;
  }
}

export function trace(i: number, agent: string, extra: Partial<Trace> = {}): Trace {
  return { trace_id: `t-${agent}-${i}`, agent_id: agent, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)).toISOString(), hook: 'tool_call', tool: 'market_data_api', args: { amount: 10 }, ...extra };
}
