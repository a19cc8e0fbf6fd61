// Shared helpers of the pipeline integration tests: unique topic prefix per test, config pointing at the
// real services, collectors that read output topics from the beginning, and a small deterministic engine
// for tests that exercise the stream mechanics rather than policy.
import { KafkaAdapter, type InMessage, type StewardConsumer } from '../../../src/adapters/kafka/client.js';
import { createTopics, topicNames, type TopicNames } from '../../../src/adapters/kafka/topics.js';
import { buildConfig, type StewardConfig } from '../../../src/config/steward-config.js';
import { createLogger } from '../../../src/logger.js';
import { services, uniqueName, deleteSubjects } from '../setup/helpers.js';
import { OutputDecoder, avroSchemaId } from '../../../src/adapters/kafka/output-decoder.js';
import { createRegistry } from '../../../src/adapters/kafka/serde.js';

export { TestEngine, MapTrustDebtStore, trace } from './test-engine.js';

export const quietLogger = () => createLogger({ level: process.env.STEWARD_TEST_LOG ?? 'silent' });

export function pipelineConfig(prefix: string, raw: Record<string, any> = {}): StewardConfig {
  const s = services();
  const base: Record<string, any> = {
    // STEWARD_TEST_AVRO_OUTPUTS=decisions,verdicts,trust_debt runs the pipeline suites with Avro outputs (topics.avro_outputs);
    // the Collector reads them back as JSON.
    topics: { prefix, partitions: 3, reply_partitions: 4, ...(process.env.STEWARD_TEST_AVRO_OUTPUTS ? { avro_outputs: process.env.STEWARD_TEST_AVRO_OUTPUTS.split(',') } : {}) },
    redis: { url: s.redisUrl },
    // STEWARD_TEST_SCORER_INPUT=join runs the pipeline suites on the scorer join (docs/pipeline.md "Hot path").
    consumer: { group_prefix: prefix, session_timeout_ms: 6000, auto_commit_interval_ms: 200, ...(process.env.STEWARD_TEST_SCORER_INPUT ? { scorer_input: process.env.STEWARD_TEST_SCORER_INPUT } : {}) },
    // Tests move time on purpose (fixed 2026 timestamps, hours apart): trust them unless a test opts in.
    limits: { max_trace_bytes: 16384, chunk_size: 200, partitions_concurrently: 3, max_event_time_skew_ms: null },
    observability: { enabled: false },
    // STEWARD_TEST_LLM_THREAD=1 runs the suites' LLM calls on the LLM thread (llm.thread, docs/pipeline.md "Gate stage").
    ...(process.env.STEWARD_TEST_LLM_THREAD === '1' ? { llm: { thread: true } } : {}),
  };
  for (const [k, v] of Object.entries(raw)) base[k] = v && typeof v === 'object' && !Array.isArray(v) ? { ...base[k], ...v } : v;
  return buildConfig(
    base,
    { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CLICKHOUSE_URL: s.clickhouseUrl },
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

/**
 * Reads topics from the beginning into memory until closed. Avro decisions, verdicts and trust-debt changes (topics.avro_outputs) are
 * decoded through the registry as they arrive: json()/byId() see every record as JSON whichever encoding it had.
 */
export class Collector {
  readonly messages: InMessage[] = [];
  private readonly decoded = new WeakMap<InMessage, unknown>();
  private readonly outputs = new OutputDecoder(createRegistry(services().schemaRegistryUrl));
  private consumer?: StewardConsumer;
  private stopped = false;
  private readonly groupId = uniqueName('collector');
  constructor(private readonly adapter: KafkaAdapter, private readonly topics: string[]) {}
  async start(): Promise<this> {
    const c = this.adapter.consumer({ groupId: this.groupId, maxWaitTimeMs: 100 });
    this.consumer = c;
    // Like StageRunner: a consumer kafkajs gives up on (a long broker restart) is replaced, same group, so the
    // collector keeps reading; byId() dedupes what is read twice.
    c.onCrash((_err, willRestart) => {
      if (willRestart || this.stopped || this.consumer !== c) return;
      this.restartLater(c);
    });
    await c.subscribe(this.topics, true);
    await c.runBatches(async (b, ctl) => {
      for (const m of b.messages) {
        if (avroSchemaId(m.value) !== undefined && /\.(decisions|verdicts|trust-debt)$/.test(m.topic)) {
          // Unknown ids (a test's bogus record) stay undecoded: json() then fails on them, as on any non-JSON value.
          const kind = m.topic.endsWith('.decisions') ? 'decision' : m.topic.endsWith('.verdicts') ? 'verdict' : 'trustDebt';
          const v = await this.outputs.decode(kind, m.value!).catch(() => undefined);
          if (v !== undefined) this.decoded.set(m, v);
        }
        this.messages.push(m);
        ctl.resolveOffset(m.offset);
      }
    });
    return this;
  }
  /**
   * Replaces `dead` after 1 s, and again after each start that fails: a start while the broker is still away fails
   * (its connect runs out of retries), and a collector that gave up then read nothing more: a likely cause of the
   * broker-restart test's one timeout on the join in CI (2026-11-27: 90 s waiting for the outputs, not reproduced
   * in 8 runs since).
   */
  private restartLater(dead: StewardConsumer): void {
    setTimeout(() => {
      if (this.stopped || this.consumer !== dead) return;
      void dead
        .disconnect()
        .catch(() => undefined)
        .then(async () => {
          if (this.stopped || this.consumer !== dead) return;
          try {
            await this.start();
          } catch {
            // start() made a new consumer before it failed: that one is replaced in turn.
            if (!this.stopped && this.consumer) this.restartLater(this.consumer);
          }
        });
    }, 1000).unref();
  }
  on(topic: string): InMessage[] {
    return this.messages.filter((m) => m.topic === topic);
  }
  json<T = any>(topic: string): T[] {
    return this.on(topic).map((m) => this.parsed<T>(m));
  }
  /** One collected record's value as JSON (an Avro decision, verdict or trust-debt change decoded). */
  parsed<T = any>(m: InMessage): T {
    return (this.decoded.has(m) ? this.decoded.get(m) : JSON.parse(m.value!.toString('utf8'))) as T;
  }
  /** Latest message per id (dedupe by trace_id / event_id). */
  byId<T = any>(topic: string, idField = 'trace_id'): Map<string, T> {
    const out = new Map<string, T>();
    for (const v of this.json<any>(topic)) out.set(v[idField], v);
    return out;
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await this.consumer?.disconnect();
  }
}

