/**
 * bench:pipeline's end-to-end phase: traces in acgp.traces → tripwire + scorer stages → sink stage → rows in
 * ClickHouse (a decision row per trace, a verdict row per trace not halted), on fresh topics and a throwaway
 * database. The clock runs from the stages' start until every row is queryable; the caller divides by the
 * same run's raw passthrough (end_to_end_vs_passthrough).
 */
import { generateKeyPairSync } from 'node:crypto';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { ClickHouseStore } from '../../src/adapters/clickhouse/client.js';
import { migrate } from '../../src/adapters/clickhouse/migrations.js';
import { ledgerSignerFrom } from '../../src/adapters/clickhouse/ledger-keys.js';
import { startSinkStage } from '../../src/process/sink-stage.js';
import { startPipeline, type PipelineDeps } from '../../src/process/pipeline.js';
import type { StewardConfig } from '../../src/config/steward-config.js';
import { createLogger } from '../../src/logger.js';
import { servicesEnv } from '../sink/services-env.js';

export async function endToEndRate(
  cfg: StewardConfig,
  deps: PipelineDeps,
  prefix: string,
  n: number,
  fill: (topic: string, n: number) => Promise<void>,
): Promise<number> {
  const env = servicesEnv();
  const topics = topicNames(prefix);
  const adapter = new KafkaAdapter(cfg.kafka);
  const admin = await adapter.admin();
  const store = new ClickHouseStore({ url: env.clickhouse, database: `steward_bench_e2e_${prefix.replace(/[^a-z0-9]/gi, '_')}` });
  const logger = createLogger({ level: 'silent' });
  try {
    await createTopics(admin, topics, { partitions: cfg.topics.partitions, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
    await migrate(store);
    await fill(topics.traces, n);
    const signer = ledgerSignerFrom(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    const ecfg = { ...cfg, topics: { ...cfg.topics, prefix }, consumer: { ...cfg.consumer, groupPrefix: prefix } };
    const t0 = performance.now();
    const sink = await startSinkStage({ kafka: { brokers: cfg.kafka.brokers, clientId: `${prefix}-sink` }, topicPrefix: prefix, groupId: `${prefix}-sink`, clickhouse: { url: env.clickhouse, database: store.database }, signer, logger, migrate: false, schemaRegistryUrl: cfg.schemaRegistryUrl });
    const pipe = await startPipeline(ecfg, ['tripwire', 'scorer'], { ...deps, scoredMarks: undefined }, { logger });
    try {
      for (;;) {
        const [d] = await store.query<{ n: string; halted: string }>(`SELECT uniqExact(trace_id) AS n, uniqExactIf(trace_id, halted = 1) AS halted FROM ${store.table('decisions')}`);
        const [v] = await store.query<{ n: string }>(`SELECT uniqExact(trace_id) AS n FROM ${store.table('verdicts')}`);
        if (Number(d!.n) >= n && Number(v!.n) >= n - Number(d!.halted)) break;
        if (performance.now() - t0 > 300_000) throw new Error(`end-to-end timed out at ${d!.n} decisions / ${v!.n} verdicts of ${n}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return n / ((performance.now() - t0) / 1000);
    } finally {
      await pipe.stop();
      await sink.stop();
    }
  } finally {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`).catch(() => undefined);
    await store.close();
    await admin.deleteTopics(Object.values(topics)).catch(() => undefined);
    await admin.disconnect();
  }
}
