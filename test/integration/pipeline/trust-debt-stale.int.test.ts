// Trust-debt event ids are remembered trust_debt.dedup_ttl_seconds; a record older than that may have been applied
// already and be replayed now. On real Kafka and Redis: the trust-debt stage dead-letters input records stamped
// more than 6/7 of the TTL ago (STEWARD_TRUST_DEBT_STALE) and applies younger ones; the store keeps dedup keys
// exactly the configured TTL.
import { describe, expect, it } from 'vitest';
import { readDlqHeaders } from '../../../src/adapters/kafka/dlq.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { Collector, quietLogger, withPipelineEnv } from './harness.js';
import { deleteRedisPrefix, redisClient, waitFor, withRedis } from '../setup/helpers.js';


describe('trust-debt records older than the dedup window (real Kafka + Redis)', () => {
  it('are dead-lettered, not applied; younger ones are applied', async () => {
    await withPipelineEnv(
      'td-stale',
      async ({ cfg, topics, adapter, prefix }) => {
        const redis = redisClient();
        const store = new RedisTrustDebtStore(redis, { prefix: `${prefix}:`, dedupTtlSeconds: cfg.trustDebt.dedupTtlSeconds });
        const pipe = await startPipeline(cfg, ['trust-debt'], { trustDebtStore: store, trustDebtConfigFor: () => DEFAULT_TRUST_DEBT_CONFIG, tenantOf: () => 'acme' }, { logger: quietLogger() });
        const out = await new Collector(adapter, [topics.trustDebt, topics.dlq]).start();
        const producer = await adapter.producer();
        const now = Date.now();
        const verdict = (id: string, stampedMs: number) => ({
          key: 'old-agent',
          value: JSON.stringify({ trace_id: id, agent_id: 'old-agent', tenant: 'acme', blueprint: 'x@1.0', intervention: 'block', event_time_ms: stampedMs }),
          timestamp: String(stampedMs),
        });
        try {
          // TTL 2 days: records up to 6/7 of it (~41 h) old are applied
          await producer.send([{ topic: topics.verdicts, messages: [verdict('stale', now - 45 * 3_600_000), verdict('fresh', now - 30 * 3_600_000)] }]);
          await waitFor(() => out.on(topics.dlq).length === 1 && out.byId(topics.trustDebt, 'event_id').has('fresh'), { timeoutMs: 20_000, message: 'stale dead-lettered, fresh applied' });
          const dl = readDlqHeaders(out.on(topics.dlq)[0]!);
          expect(dl).toMatchObject({ code: 'STEWARD_TRUST_DEBT_STALE', sourceTopic: topics.verdicts, stage: 'trust-debt' });
          expect(dl.message).toMatch(/45 h old, beyond 41 h/);
          expect(out.byId(topics.trustDebt, 'event_id').has('stale')).toBe(false);
          expect((await store.state('acme', 'old-agent'))?.applied).toBe(1);
        } finally {
          await producer.disconnect();
          await out.stop();
          await pipe.stop();
          await deleteRedisPrefix(redis, `${prefix}:`);
          await redis.quit();
        }
      },
      { trust_debt: { dedup_ttl_seconds: 2 * 86_400 } },
    );
  }, 60_000);
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

