// Trust-debt event ids are remembered trust_debt.dedup_ttl_seconds; a replayed record older than that would be
// applied again. On real Kafka and Redis: `steward topics create`'s layout keeps every record of the trust-debt
// inputs shorter-lived than the TTL, topics with broker defaults are reported (by replayExposure and by the
// trust-debt stage at start), and the store keeps dedup keys exactly the configured TTL.
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { createTopics, replayExposure, topicNames, DEFAULT_TOPIC_LAYOUT } from '../../../src/adapters/kafka/topics.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { startPipeline } from '../../../src/consumers/common-runtime.js';
import { DEFAULT_TRUST_DEBT_CONFIG, MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { withPipelineEnv } from './harness.js';
import { services, uniqueName, withRedis } from '../setup/helpers.js';

const DAY = 86_400_000;

function capture() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

describe('trust-debt replay exposure (real Kafka)', () => {
  it('topics created with the dedup TTL are safe; broker-default retention (7 d + 7 d segments) is reported', async () => {
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-retention' });
    const admin = await adapter.admin();
    const safe = topicNames(uniqueName('ret-safe'));
    const plain = topicNames(uniqueName('ret-plain'));
    try {
      await createTopics(admin, safe, { ...DEFAULT_TOPIC_LAYOUT, partitions: 1, replyPartitions: 1, dedupTtlMs: 7 * DAY });
      await createTopics(admin, plain, { ...DEFAULT_TOPIC_LAYOUT, partitions: 1, replyPartitions: 1 });
      expect(await admin.topicConfig(safe.verdicts, ['retention.ms', 'segment.ms'])).toEqual({ 'retention.ms': String(5 * DAY), 'segment.ms': String(DAY) });
      expect(await replayExposure(admin, safe, 7 * DAY)).toEqual([]);
      // the same topics under a shorter TTL are exposed again
      expect((await replayExposure(admin, safe, 5 * DAY)).map((e) => e.topic)).toEqual([safe.decisions, safe.verdicts, safe.reviews]);
      const exposed = await replayExposure(admin, plain, 7 * DAY);
      expect(exposed.map((e) => e.topic)).toEqual([plain.decisions, plain.verdicts, plain.reviews]);
      expect(exposed[0]!.retentionMs).toBeGreaterThan(0);
      expect(exposed[0]!.retentionMs + exposed[0]!.segmentMs).toBeGreaterThan(7 * DAY);
    } finally {
      await admin.deleteTopics([...Object.values(safe), ...Object.values(plain)]).catch(() => undefined);
      await admin.disconnect();
    }
  }, 60_000);

  it('the trust-debt stage warns at start when its inputs outlive the dedup TTL, and not otherwise', async () => {
    // withPipelineEnv creates topics without a dedup TTL: broker defaults
    await withPipelineEnv('ret-run', async ({ cfg }) => {
      const { logger, lines } = capture();
      const store = new MemoryTrustDebtStore();
      const deps = { trustDebtStore: store, trustDebtConfigFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme' };
      let pipe = await startPipeline(cfg, ['trust-debt'], deps, { logger });
      await pipe.stop();
      const warned = lines.filter((l) => l.dedup_ttl_ms === 7 * DAY);
      expect(warned.map((l) => l.topic).sort()).toEqual([cfg.topics.prefix + '.decisions', cfg.topics.prefix + '.reviews', cfg.topics.prefix + '.verdicts']);
      expect(warned[0]!.msg).toMatch(/would apply them to trust debt again; set retention\.ms 432000000 and segment\.ms 86400000/);
      // A TTL longer than the broker defaults' record life (retention 7 d + segment 7 d): nothing to report.
      lines.length = 0;
      pipe = await startPipeline({ ...cfg, trustDebt: { ...cfg.trustDebt, dedupTtlSeconds: 15 * 86_400 } }, ['trust-debt'], deps, { logger });
      await pipe.stop();
      expect(lines.filter((l) => l.dedup_ttl_ms !== undefined)).toEqual([]);
    });
  }, 90_000);
});

describe('trust-debt dedup TTL (real Redis)', () => {
  it('keeps an applied event id for the configured TTL', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisTrustDebtStore(redis, { prefix, dedupTtlSeconds: 3 * 3600 });
      await store.apply({ eventId: 'e-1', tenant: 'acme', agentId: 'a1', atMs: Date.UTC(2026, 0, 1), kind: 'intervention', intervention: 'block' }, DEFAULT_TRUST_DEBT_CONFIG);
      const keys = await redis.keys(`${prefix}*:ev:*`);
      expect(keys).toHaveLength(1);
      const ttl = await redis.ttl(keys[0]!);
      expect(ttl).toBeGreaterThan(3 * 3600 - 60);
      expect(ttl).toBeLessThanOrEqual(3 * 3600);
    });
  });
});
