/**
 * Small shared ioredis factory. URL from the argument or REDIS_URL. Auto-pipelining batches the
 * commands issued in the same tick into one round trip, which is what lets many in-flight trust-debt
 * updates share the network.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { StewardError } from '../../errors.js';

export type { Redis } from 'ioredis';

export function redisUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const u = env.REDIS_URL?.trim();
  return u ? u : undefined;
}

export function createRedis(url: string | undefined = redisUrlFromEnv(), opts: RedisOptions = {}): Redis {
  if (!url) throw new StewardError('STEWARD_CONFIG', 'REDIS_URL is not set');
  return new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 3, lazyConnect: false, ...opts });
}
