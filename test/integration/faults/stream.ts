// The whole stream for the fault tests: the real engine on the shipped blueprints, tripwire → scorer →
// trust-debt → sink on real Kafka, Redis, ClickHouse (and the registry), with unique topics, Redis prefix and
// database. `registryUrl` / `redisUrl` put a fault proxy in front of a service.
import { fileURLToPath } from 'node:url';
import { StewardClient } from '../../../src/client/steward-client.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import type { TopicNames } from '../../../src/adapters/kafka/topics.js';
import type { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import type { StewardConfig } from '../../../src/config/steward-config.js';
import { bootstrapEngine, type EngineRuntime } from '../../../src/process/engine-runtime.js';
import { startPipeline, type RunningPipeline } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ledgerSignerFor } from '../../../src/process/steward-process.js';
import type { Trace } from '../../../src/engine/types.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix, withClickHouseDatabase } from '../setup/helpers.js';

export const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));
export const STAGES = ['tripwire', 'scorer', 'trust-debt', 'sink'] as const;

export interface FaultStream {
  cfg: StewardConfig;
  topics: TopicNames;
  adapter: KafkaAdapter;
  rt: EngineRuntime;
  pipe: RunningPipeline;
  out: Collector;
  client: StewardClient;
  store: ClickHouseStore;
  redisPrefix: string;
}

const T0 = Date.UTC(2026, 3, 1, 8);

/** A refund by support-1 (support/refund_agent@1.0: refund_rate is a stateful tripwire). */
export function refund(prefix: string, i: number, amount = 50): Trace {
  return {
    trace_id: `${prefix}-r${i}`,
    agent_id: 'support-1',
    timestamp: new Date(T0 + i * 600_000).toISOString(),
    hook: 'tool_call',
    tool: 'issue_refund',
    args: { amount, order_id: `ORD-${i}` },
  };
}

export async function withFaultStream<T>(
  name: string,
  fn: (s: FaultStream) => Promise<T>,
  opts: { registryUrl?: string; redisUrl?: string; raw?: Record<string, unknown> } = {},
): Promise<T> {
  const redisPrefix = uniqueRedisPrefix(name);
  return withClickHouseDatabase(async (db) =>
    withPipelineEnv(name, async ({ cfg: base, topics, adapter }) => {
      const built = pipelineConfig(base.topics.prefix, {
        blueprints: { dir: BLUEPRINTS, agents: `${BLUEPRINTS}/agents.yaml`, watch: false },
        redis: { key_prefix: redisPrefix, ...(opts.redisUrl ? { url: opts.redisUrl } : {}) },
        clickhouse: { database: db.name },
        consumer: { group_prefix: base.consumer.groupPrefix },
        trust_debt: { audit_sweep_interval_ms: 0 },
        ...opts.raw,
      });
      // Environment values win over the file in buildConfig: the proxies are put in afterwards.
      const cfg: StewardConfig = {
        ...built,
        ...(opts.registryUrl ? { schemaRegistryUrl: opts.registryUrl } : {}),
        ...(opts.redisUrl ? { redis: { ...built.redis, url: opts.redisUrl } } : {}),
      };
      const logger = quietLogger();
      const rt = await bootstrapEngine(cfg, [...STAGES], logger);
      const pipe = await startPipeline(cfg, [...STAGES], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSignerFor(cfg, logger)) }, { logger });
      const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.trustDebt, topics.dlq]).start();
      const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
      const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
      try {
        return await fn({ cfg, topics, adapter, rt, pipe, out, client, store, redisPrefix });
      } finally {
        await client.close();
        await out.stop();
        await pipe.stop();
        await rt.close();
        await store.close();
        const redis = redisClient();
        await deleteRedisPrefix(redis, redisPrefix).catch(() => undefined);
        redis.disconnect();
      }
    }),
  );
}

/** Decisions stored in ClickHouse for these trace ids. */
export async function storedDecisions(store: ClickHouseStore, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const list = ids.map((id) => `'${id.replace(/'/g, "\\'")}'`).join(',');
  const rows = await store.query<{ trace_id: string }>(`SELECT trace_id FROM ${store.table('v_decisions')} WHERE trace_id IN (${list})`);
  return new Set(rows.map((r) => r.trace_id));
}
