/**
 * Small shared ioredis factory (the URL comes from the configuration: redis.url / REDIS_URL; Redis Cluster seed
 * nodes from redis.cluster_nodes / REDIS_CLUSTER_NODES). Auto-pipelining batches the commands issued in the same
 * tick into one round trip (per cluster node), which is what lets many in-flight trust-debt updates share the network.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { StewardError } from '../../errors.js';

export type { Redis } from 'ioredis';

/** A standalone (or Sentinel) client or a Redis Cluster client: what every Redis adapter accepts. */
export type RedisClient = Redis | Cluster;

export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  if (!url) throw new StewardError('STEWARD_CONFIG', 'no Redis URL (redis.url / REDIS_URL)');
  // The decision path's state rounds are batched per turn already (state-rounds.ts): auto-pipelining them again cost
  // a Pipeline object (which copies every defined script onto itself) and a setImmediate hop per call — ~30 % of a
  // 14-operation call's CPU (docs/pipeline.md "The engine alone with Redis"). Other commands keep it.
  return new Redis(url, { enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['stewardStateRound'], maxRetriesPerRequest: 3, lazyConnect: false, ...opts });
}

/** `host:port` seed nodes (a `redis://` prefix is accepted and dropped). */
export function parseClusterNodes(nodes: readonly string[]): { host: string; port: number }[] {
  return nodes
    .map((n) => n.trim().replace(/^rediss?:\/\//, '').replace(/\/.*$/, ''))
    .filter((n) => n !== '')
    .map((n) => {
      const at = n.lastIndexOf(':');
      const port = Number(at < 0 ? 6379 : n.slice(at + 1));
      if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new StewardError('STEWARD_CONFIG', `redis.cluster_nodes: '${n}' is not host:port`);
      return { host: at < 0 ? n : n.slice(0, at), port };
    });
}

/**
 * The client the process uses: a Cluster client when `clusterNodes` names seed nodes, else `createRedis(url)`.
 * The password of `url` (if any) is used for the cluster nodes too.
 */
export function createRedisClient(url: string, clusterNodes: readonly string[] | undefined, opts: RedisOptions = {}): RedisClient {
  const seeds = parseClusterNodes(clusterNodes ?? []);
  if (seeds.length === 0) return createRedis(url, opts);
  let password: string | undefined;
  let username: string | undefined;
  try {
    const u = new URL(url);
    if (u.password) password = decodeURIComponent(u.password);
    if (u.username) username = decodeURIComponent(u.username);
  } catch {
    // no usable URL: no credentials
  }
  const copts: ClusterOptions = {
    // off when asked: the HTTP ingress's claims are written when made (docs/spec-decisions.md D39)
    enableAutoPipelining: opts.enableAutoPipelining ?? true,
    // ioredis' cluster auto-pipelining files a script of a variable key count under the wrong node ("All keys in
    // the pipeline should belong to the same slots allocation group"); those calls are still sent without
    // waiting for each other's replies, one write each.
    autoPipeliningIgnoredCommands: ['stewardStateRound', 'stewardCasRound'],
    redisOptions: { maxRetriesPerRequest: opts.maxRetriesPerRequest ?? 3, password, username },
    // Slot moves (resharding) are followed; a script's keys always share one slot, so MOVED/ASK apply to the whole call.
    maxRedirections: 16,
    lazyConnect: opts.lazyConnect ?? false,
  };
  return new Cluster(seeds, copts);
}

/** True for a Redis Cluster client. */
export function isCluster(r: RedisClient): r is Cluster {
  return (r as Cluster).isCluster === true;
}

/** The nodes a key scan must visit: every master of a cluster, or the one server. */
export function scanNodes(r: RedisClient): Redis[] {
  return isCluster(r) ? r.nodes('master') : [r];
}

/**
 * Every key matching `pattern` (SCAN MATCH on each master). For the few per-slot keys (known agents, re-tiering
 * queue, audit outbox): at most one per slot, so a full scan is bounded.
 */
export async function scanKeys(r: RedisClient, pattern: string, count = 1000): Promise<string[]> {
  const out = new Set<string>();
  // A cluster client knows its masters only once it has loaded the slot map.
  if (isCluster(r) && r.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const onEnd = () => reject(new StewardError('STEWARD_STATE_UNAVAILABLE', 'redis cluster connection ended before it was ready', { retryable: true }));
      r.once('ready', () => {
        r.off('end', onEnd);
        resolve();
      });
      r.once('end', onEnd);
    });
  }
  for (const node of scanNodes(r)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      for (const k of keys) out.add(k);
    } while (cursor !== '0');
  }
  return [...out].sort();
}

/** `s` with SCAN/KEYS glob characters escaped. */
export function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, '\\$&');
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

/**
 * A Redis adapter's failure as a StewardError (issue #22 items 10 and the scorer's raw ioredis errors): every
 * Redis call of a stage goes through this, so no raw ioredis error (MaxRetriesPerRequestError, a closed
 * connection) reaches the stage runner, which would take it for a bug and dead-letter the input.
 * - script / wrong type: fails the same way on every retry → STEWARD_STATE_UNAVAILABLE, not retryable (DLQ).
 * - out of memory: STEWARD_STATE_OOM, retryable; the stage runner retries it at most redis.oom_retry_ms, then
 *   dead-letters the input with that code (spec-decisions D32): memory rarely comes back by itself, and a
 *   partition waiting for ever hides the outage behind consumer lag.
 * - anything else (connection lost, timeouts, cluster moves): STEWARD_STATE_UNAVAILABLE, retryable.
 * A StewardError passes through unchanged.
 */
export function redisAdapterError(e: unknown, what: string): StewardError {
  if (e instanceof StewardError) return e;
  const text = e instanceof Error ? e.message : String(e);
  const kind = redisFailureKind(e);
  if (kind === 'script') return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis ${what} (fails on every retry, not retried): ${text}`, { cause: e });
  if (kind === 'oom') return new StewardError('STEWARD_STATE_OOM', `redis ${what}: out of memory (maxmemory reached with noeviction): ${text}`, { retryable: true, cause: e });
  return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis ${what}: ${text}`, { retryable: true, cause: e });
}

/** `f()` with its failure as redisAdapterError(e, what). */
export async function redisCall<T>(what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw redisAdapterError(e, what);
  }
}
