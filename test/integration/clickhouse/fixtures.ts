// Shared fixtures of the ClickHouse/sink integration tests: realistic decision/verdict messages, a producer,
// and a sink stage wired to unique topics and a unique database.
import { generateKeyPairSync } from 'node:crypto';
import { pino } from 'pino';
import { topicNames, type TopicNames } from '../../../src/adapters/kafka/topics.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { ledgerSignerFrom } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { startSinkStage, type RunningSink, type SinkStageOptions } from '../../../src/process/sink-stage.js';
import { createTopics, deleteTopics, kafkaClient, services, uniqueIdent, uniqueName } from '../setup/helpers.js';

export const keys = generateKeyPairSync('ed25519');
// The production signer (steward run): per-entry signatures on the sink's signing threads.
export const signer = ledgerSignerFrom(keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
export const publicPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const T0 = 1_700_000_000_000;

export function decisionMsg(i: number, agents = 8) {
  const block = i % 5 === 0;
  return {
    trace_id: `trace-${i}`,
    agent_id: `agent-${i % agents}`,
    tenant: 'acme',
    blueprint: i % 2 ? 'finance/trading_bot@1.0' : 'clarity.baseline@1.0',
    intervention: block ? 'block' : 'ok',
    approved: !block,
    stage: block ? 'rule' : 'none',
    halted: false,
    reasons: block ? ['trade too large'] : [],
    tripwires: [{ id: 'trade_size_limit', fired: false }],
    rules: [{ id: 'single_trade_volume_cap', passed: !block, ...(block ? { decision: 'block', reason: 'trade too large' } : {}) }],
    latency_ms: 0.5 + (i % 9),
    event_time_ms: T0 + i * 1000,
    decided_at_ms: T0 + i * 1000 + 2,
    hook: 'tool_call',
    tool: 'execute_trade',
  };
}

export function verdictMsg(i: number, agents = 8) {
  const ctq = 0.5 + (i % 5) / 10;
  return {
    trace_id: `trace-${i}`,
    agent_id: `agent-${i % agents}`,
    tenant: 'acme',
    blueprint: 'finance/trading_bot@1.0',
    intervention: ctq < 0.6 ? 'escalate' : 'ok',
    approved: ctq >= 0.6,
    stage: 'ctq',
    ctq,
    risk: 1 - ctq,
    metrics: [{ name: 'clarity', score: ctq, weight: 1, confidence: 0.8, scorer: 'rule-based', status: 'ok' }],
    verdict: { version: 'pvs-1', approved: ctq >= 0.6, reasoning: 'r', policy_violations: ctq < 0.6 ? ['clarity'] : [], confidence_score: 0.9, signature: { alg: 'Ed25519', kid: 'k', sig: 'c2ln' } },
    event_time_ms: T0 + i * 1000,
    scored_at_ms: T0 + i * 1000 + 40,
  };
}

export interface Env {
  prefix: string;
  topics: TopicNames;
  database: string;
  store: ClickHouseStore;
  produce(topic: string, msgs: { agent_id?: string; [k: string]: unknown }[] | { key: string; value: string }[]): Promise<void>;
  startSink(opts?: { groupId?: string; clickhouseUrl?: string; shutdownTimeoutMs?: number } & Pick<SinkStageOptions, 'adapter' | 'restartDelayMs' | 'metrics' | 'schemaRegistryUrl'>): Promise<RunningSink>;
  count(view: string, where?: string): Promise<{ n: number; u: number }>;
  close(): Promise<void>;
}

export async function setupEnv(name: string, opts: { partitions?: number; clickhouseUrl?: string } = {}): Promise<Env> {
  const prefix = uniqueName(`it-${name}`);
  const topics = topicNames(prefix);
  // Every topic the sink reads (sink-processor's kinds: the rollout topics and acgp.approvals too).
  const all = [topics.decisions, topics.verdicts, topics.ledger, topics.trustDebt, topics.gate, topics.dlq, topics.rollouts, topics.shadowDiffs, topics.reviewQueue, topics.approvals];
  await createTopics(services().kafkaBrokers, all, opts.partitions ?? 3);
  const database = uniqueIdent(`steward_it_${name}`);
  const chUrl = opts.clickhouseUrl ?? services().clickhouseUrl;
  const store = new ClickHouseStore({ url: chUrl, database });
  const producer = kafkaClient().producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const sinks: RunningSink[] = [];
  const logger = pino({ level: process.env.STEWARD_LOG_LEVEL ?? 'silent' });
  return {
    prefix,
    topics,
    database,
    store,
    async produce(topic, msgs) {
      const messages = msgs.map((m) =>
        'value' in m && typeof m.value === 'string' && 'key' in m ? (m as { key: string; value: string }) : { key: String((m as { agent_id?: string }).agent_id ?? ''), value: JSON.stringify(m) },
      );
      await producer.send({ topic, messages, acks: -1 });
    },
    async startSink(o = {}) {
      const s = await startSinkStage({
        kafka: { brokers: services().kafkaBrokers, clientId: uniqueName('sink') },
        topicPrefix: prefix,
        groupId: o.groupId ?? `${prefix}-sink`,
        clickhouse: { url: o.clickhouseUrl ?? chUrl, database, requestTimeoutMs: 5000 },
        signer,
        logger,
        maxRows: 500,
        maxDelayMs: 50,
        retry: { initialMs: 50, maxMs: 500 },
        autoCommitIntervalMs: 200,
        sessionTimeoutMs: 10_000,
        shutdownTimeoutMs: o.shutdownTimeoutMs ?? 5000,
        adapter: o.adapter,
        restartDelayMs: o.restartDelayMs,
        metrics: o.metrics,
        schemaRegistryUrl: o.schemaRegistryUrl,
      });
      sinks.push(s);
      return s;
    },
    async count(view, where = '1') {
      const r = await store.query<{ n: string; u: string }>(`SELECT count() AS n, uniqExact(trace_id) AS u FROM ${store.table(view)} WHERE ${where}`);
      return { n: Number(r[0].n), u: Number(r[0].u) };
    },
    async close() {
      await Promise.allSettled(sinks.map((s) => s.stop()));
      await producer.disconnect();
      await store.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
      await store.close();
      await deleteTopics(services().kafkaBrokers, all).catch(() => undefined);
    },
  };
}

/** Committed offsets of `group` equal the high watermarks of every topic: the sink has consumed (and inserted) everything. */
export async function caughtUp(group: string, topics: string[]): Promise<boolean> {
  const admin = kafkaClient().admin();
  await admin.connect();
  try {
    for (const t of topics) {
      const high = await admin.fetchTopicOffsets(t);
      const [committed] = await admin.fetchOffsets({ groupId: group, topics: [t] });
      for (const p of high) {
        const c = committed.partitions.find((x) => x.partition === p.partition);
        if (Number(p.high) > 0 && Number(c?.offset ?? -1) < Number(p.high)) return false;
      }
    }
    return true;
  } finally {
    await admin.disconnect();
  }
}
