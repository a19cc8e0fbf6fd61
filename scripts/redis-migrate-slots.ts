// Moves a deployment's trust-debt keys to their per-slot names (spec-decisions D28; docs/pipeline.md
// "Redis Cluster"). Stop every Steward process first.
//   npx tsx scripts/redis-migrate-slots.ts [--redis URL] [--cluster host:port,...] [--prefix P]
// Defaults: REDIS_URL / REDIS_CLUSTER_NODES / STEWARD_REDIS_PREFIX, else redis://127.0.0.1:16379 and steward:.
import { parseArgs } from 'node:util';
import { createRedisClient } from '../src/adapters/redis/client.js';
import { RedisTrustDebtStore } from '../src/adapters/redis/trust-debt-store.js';
import { migrateTrustDebtKeysToSlots } from '../src/adapters/redis/key-migration.js';

const { values } = parseArgs({ options: { redis: { type: 'string' }, cluster: { type: 'string' }, prefix: { type: 'string' } } });
const url = values.redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:16379';
const nodes = (values.cluster ?? process.env.REDIS_CLUSTER_NODES ?? '').split(',').filter(Boolean);
const prefix = values.prefix ?? process.env.STEWARD_REDIS_PREFIX ?? 'steward:';
const redis = createRedisClient(url, nodes);
try {
  const report = await migrateTrustDebtKeysToSlots(redis, new RedisTrustDebtStore(redis, { prefix }));
  process.stdout.write(`${JSON.stringify({ prefix, ...report })}\n`);
} finally {
  redis.disconnect();
}
