// The Redis Cluster the redis-cluster suite runs against: REDIS_CLUSTER_NODES when set (CI: .ci/run starts the
// profile and exports it), else `scripts/services.sh up redis-cluster` (three native masters on loopback;
// idempotent, started once per machine and left running like the other services).
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, vi } from 'vitest';
import path from 'node:path';
import { type Cluster, Redis } from 'ioredis';
import { createRedisClient, scanNodes, type RedisClient } from '../../../src/adapters/redis/client.js';
import { keySlot } from '../../../src/adapters/redis/slots.js';
import { REPO_ROOT } from '../setup/services.js';
import { redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

let nodes: string[] | undefined;

export function clusterNodes(): string[] {
  if (nodes) return nodes;
  let list = process.env.REDIS_CLUSTER_NODES;
  if (!list) {
    const script = path.join(REPO_ROOT, 'scripts', 'services.sh');
    execFileSync('bash', [script, 'up', 'redis-cluster'], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
    const env = execFileSync('bash', [script, 'env', 'redis-cluster'], { encoding: 'utf8' });
    list = /REDIS_CLUSTER_NODES=(\S+)/.exec(env)?.[1];
  }
  if (!list) throw new Error('no Redis Cluster: REDIS_CLUSTER_NODES unset and scripts/services.sh up redis-cluster printed no nodes');
  nodes = list.split(',').filter(Boolean);
  return nodes;
}

/** A Cluster client, connected (every master known); `autoPipelining: false` as the ingress's claims connection is. */
export async function clusterClient(o: { autoPipelining?: boolean } = {}): Promise<RedisClient> {
  const c = createRedisClient('', clusterNodes(), { maxRetriesPerRequest: 3, ...(o.autoPipelining === false && { enableAutoPipelining: false }) });
  if (c.status !== 'ready') await new Promise<void>((resolve, reject) => {
    c.once('ready', () => resolve());
    c.once('error', reject);
  });
  return c;
}

/** Deletes the prefix's keys on every master. */
export async function deleteClusterPrefix(c: RedisClient, prefix: string): Promise<void> {
  const pattern = `${prefix.replace(/([*?[\]\\])/g, '\\$1')}*`;
  for (const node of scanNodes(c)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      // one key at a time: keys of different slots cannot share a command on a cluster node
      for (const k of keys) await node.unlink(k);
    } while (cursor !== '0');
  }
}

/** Runs `fn` with a connected cluster client and a unique key prefix; deletes the prefix's keys after. */
export async function withCluster<T>(fn: (c: RedisClient, prefix: string) => Promise<T>): Promise<T> {
  const c = await clusterClient();
  const prefix = uniqueRedisPrefix('steward-cl');
  try {
    return await fn(c, prefix);
  } finally {
    await deleteClusterPrefix(c, prefix).catch(() => undefined);
    await c.quit().catch(() => c.disconnect());
  }
}

/** How many masters hold at least one key of `prefix` (the keys really spread over the cluster). */
export async function mastersHolding(c: RedisClient, prefix: string): Promise<number> {
  let n = 0;
  const pattern = `${prefix.replace(/([*?[\]\\])/g, '\\$1')}*`;
  for (const node of scanNodes(c)) {
    // the whole keyspace (one SCAN call of COUNT n may stop early on a node holding other tests' keys)
    let cursor = '0';
    let found = false;
    do {
      const [next, keys] = await (node as Redis).scan(cursor, 'MATCH', pattern, 'COUNT', 10_000);
      cursor = next;
      found = keys.length > 0;
    } while (!found && cursor !== '0');
    if (found) n++;
  }
  return n;
}

/**
 * Where a run's keys landed: how many of the cluster's masters hold keys of `prefix`, and how many keys of it the
 * single Redis (services().redisUrl) holds. A runtime given redis.cluster_nodes must give { masters: 3,
 * standalone: 0 }: with the single Redis as redis.url, a runtime that dropped the cluster nodes would still decide
 * correctly there, and only this tells the two apart.
 */
export async function placement(c: RedisClient, prefix: string): Promise<{ masters: number; standalone: number }> {
  const single = redisClient();
  try {
    const pattern = `${prefix.replace(/([*?[\]\\])/g, '\\$1')}*`;
    let standalone = 0;
    let cursor = '0';
    do {
      const [next, keys] = await single.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000);
      cursor = next;
      standalone += keys.length;
    } while (cursor !== '0');
    return { masters: await mastersHolding(c, prefix), standalone };
  } finally {
    single.disconnect();
  }
}

/** The port of the master serving `key`'s slot (the suite's masters share one host, loopback: the port tells them apart). */
export async function masterPortOf(c: RedisClient, key: string): Promise<number> {
  const slot = keySlot(key);
  const ranges = await (c as Cluster).cluster('SLOTS');
  const owner = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2];
  if (!owner) throw new Error(`no master serves slot ${slot}`);
  return owner[1];
}

/** `redis://host:port` of a master that does NOT serve `key`'s slot (a single-server client on it is told MOVED). */
export async function masterNotServing(c: RedisClient, key: string): Promise<string> {
  const slot = keySlot(key);
  const port = await masterPortOf(c, key);
  const other = scanNodes(c).find((n) => n.options.port !== port);
  if (!other) throw new Error(`every master serves slot ${slot}?`);
  return `redis://${other.options.host}:${other.options.port}`;
}

/**
 * For CLI tests on the cluster: each test's stdout captured (stderr silenced) with the cluster's nodes in
 * REDIS_CLUSTER_NODES. `json()`: the output's JSON lines; `clear()`: forget the output so far (between commands).
 */
export function clusterCliOutput(): { json: () => Record<string, unknown>[]; clear: () => void } {
  let out: string[] = [];
  beforeEach(() => {
    out = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    vi.stubEnv('REDIS_CLUSTER_NODES', clusterNodes().join(','));
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });
  return {
    json: () => out.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
    clear: () => void (out = []),
  };
}
