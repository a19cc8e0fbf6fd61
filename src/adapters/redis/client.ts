/**
 * Small shared ioredis factory (the URL comes from the configuration: redis.url / REDIS_URL). Auto-pipelining batches the
 * commands issued in the same tick into one round trip, which is what lets many in-flight trust-debt
 * updates share the network.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { StewardError } from '../../errors.js';

export type { Redis } from 'ioredis';

export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  if (!url) throw new StewardError('STEWARD_CONFIG', 'no Redis URL (redis.url / REDIS_URL)');
  return new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 3, lazyConnect: false, ...opts });
}
