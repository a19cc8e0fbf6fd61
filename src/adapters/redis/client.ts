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

/**
 * Redis replies no retry cures (issue #22 item 10): a script that fails at run time (a Lua error, a command
 * inside it against a key of the wrong type) or a command on a key of the wrong type fails the same way on
 * every attempt, so it is reported non-retryable (the input is dead-lettered with the reason) instead of
 * stalling its partition for ever. NOSCRIPT is not among them (the script cache was flushed; EVAL resends it).
 * `oom`: Redis refused a write at maxmemory; the caller decides (see docs/trust-debt.md, Redis settings).
 */
export function redisFailureKind(e: unknown): 'script' | 'oom' | 'transient' {
  const msg = e instanceof Error ? e.message : String(e);
  if (/^NOSCRIPT\b/.test(msg)) return 'transient';
  if (/^OOM\b/.test(msg) || /\bOOM command not allowed\b/.test(msg)) return 'oom';
  if (/^WRONGTYPE\b/.test(msg) || /\buser_script:\d+:/.test(msg) || /^ERR (Error running script|user_script)/.test(msg)) return 'script';
  return 'transient';
}
