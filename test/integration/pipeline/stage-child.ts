// A Steward stage process for the crash tests: `node --import tsx stage-child.ts <json options>`.
// Real Kafka and Redis; `engine: 'real'` runs the product's engine (repo blueprints + agents.yaml, Redis
// state, as `steward run` bootstraps it), otherwise the deterministic TestEngine stands in for policy.
// Prints READY once joined.
import { fileURLToPath } from 'node:url';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { startPipeline, type StageName } from '../../../src/process/pipeline.js';
import { createRedis, type RedisClient } from '../../../src/adapters/redis/client.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { RedisScoredMarks } from '../../../src/adapters/redis/scored-marks.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { createLogger } from '../../../src/logger.js';
import { TestEngine } from './test-engine.js';

interface ChildOpts {
  prefix: string;
  stages: StageName[];
  redisPrefix: string;
  delayMs: number;
  partitions: number;
  engine?: 'real' | 'test';
  /** consumer.auto_commit_interval_ms (default 200) and consumer.exactly_once (default: the product's). */
  commitIntervalMs?: number;
  exactlyOnce?: string[];
  /** consumer.scorer_dedup_ttl_seconds (default: the product's). */
  scorerDedupTtlSeconds?: number;
  /** consumer.scorer_input (default: the product's). */
  scorerInput?: 'scoring' | 'join';
}

const o = JSON.parse(process.argv[2]) as ChildOpts;
const cfg = buildConfig(
  {
    topics: { prefix: o.prefix, partitions: o.partitions, reply_partitions: 2 },
    consumer: { group_prefix: o.prefix, session_timeout_ms: 6000, auto_commit_interval_ms: o.commitIntervalMs ?? 200, ...(o.exactlyOnce ? { exactly_once: o.exactlyOnce } : {}), ...(o.scorerDedupTtlSeconds !== undefined ? { scorer_dedup_ttl_seconds: o.scorerDedupTtlSeconds } : {}), ...((o.scorerInput ?? process.env.STEWARD_TEST_SCORER_INPUT) ? { scorer_input: o.scorerInput ?? process.env.STEWARD_TEST_SCORER_INPUT } : {}) },
    limits: { chunk_size: 50, partitions_concurrently: o.partitions, max_event_time_skew_ms: null },
    observability: { enabled: false },
    blueprints: { dir: fileURLToPath(new URL('../../../blueprints', import.meta.url)), watch: false },
    redis: { key_prefix: o.redisPrefix },
    // Traces carry 2026-01-01 event times: a wall-clock audit sweep would credit those windows behind the test's back.
    trust_debt: { audit_sweep_interval_ms: 0 },
  },
  process.env,
);
const logger = createLogger({ level: process.env.STEWARD_TEST_LOG ?? 'silent' });
let redis: RedisClient | undefined;
let deps;
if (o.engine === 'real') {
  const rt = await bootstrapEngine(cfg, o.stages, logger);
  redis = rt.redis;
  deps = rt.deps;
} else {
  const engine = new TestEngine();
  engine.delayMs = o.delayMs;
  redis = o.stages.includes('trust-debt') || o.stages.includes('scorer') ? createRedis(cfg.redis.url, { maxRetriesPerRequest: 1 }) : undefined;
  redis?.on('error', () => undefined);
  const store = redis ? new RedisTrustDebtStore(redis, { prefix: o.redisPrefix }) : undefined;
  // As the product's bootstrap wires them for the scorer.
  const scoredMarks = redis && o.stages.includes('scorer') && cfg.consumer.scorerDedupTtlSeconds > 0 ? new RedisScoredMarks(redis, { prefix: o.redisPrefix, ttlSeconds: cfg.consumer.scorerDedupTtlSeconds }) : undefined;
  deps = { engine, trustDebtStore: store, trustDebtConfigFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme', scoredMarks };
}
const pipe = await startPipeline(cfg, o.stages, deps, { logger });
const t = setInterval(() => {
  if (pipe.isReady()) {
    clearInterval(t);
    process.stdout.write('READY\n');
  }
}, 50);
const stop = async () => {
  await pipe.stop();
  const done = (await pipe.metrics.messages.get()).values.reduce((a, v) => a + v.value, 0);
  process.stdout.write(`PROCESSED ${done}\n`);
  redis?.disconnect();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
// SIGUSR2: the partitions this instance reports steward_consumer_lag for (the rebalance test).
process.on('SIGUSR2', () => {
  void pipe.metrics.consumerLag.get().then((g) => {
    const parts = g.values.map((v) => `${v.labels.topic}:${v.labels.partition}`).sort();
    process.stdout.write(`LAG ${JSON.stringify(parts)}\n`);
  });
});
