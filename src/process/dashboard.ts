/**
 * The analyst dashboard inside `steward run` (docs/dashboard.md), when dashboard.enabled: the same server
 * `steward dashboard` starts, on the process's ClickHouse through the read-only client, the re-tiering queue
 * from its Redis, and ledger entries verified with the key the sink signs them with.
 */
import type { KeyObject } from 'node:crypto';
import { loadPublicKeys } from '../adapters/clickhouse/ledger-keys.js';
import { ReadOnlyClickHouseStore } from '../adapters/dashboard/read-only-store.js';
import { DashboardServer } from '../adapters/dashboard/server.js';
import { createRedisClient } from '../adapters/redis/client.js';
import { RedisTrustDebtStore } from '../adapters/redis/trust-debt-store.js';
import type { StewardConfig } from '../config/steward-config.js';
import type { RetierRequest } from '../engine/trust-debt/index.js';

export interface RunningDashboard {
  port: number;
  close(): Promise<void>;
}

export interface RetierQueueSource {
  retierQueue(): Promise<RetierRequest[]>;
  close(): void;
}

/**
 * The re-tiering panel's source (here and in `steward dashboard`): the deployment's Redis — a Cluster client when
 * redis.cluster_nodes is set, so the per-slot queues of every master are scanned (a single-server client on a
 * cluster scanned the one master redis.url names: a third of the queue on three masters, silently). `redisUrl`
 * (`--redis`) names one server and turns the cluster off, as for `steward debt show`.
 */
export function retierQueueSource(cfg: Pick<StewardConfig, 'redis' | 'trustDebt'>, opts: { redisUrl?: string; prefix?: string } = {}): RetierQueueSource {
  const redis = createRedisClient(opts.redisUrl ?? cfg.redis.url, opts.redisUrl ? [] : cfg.redis.clusterNodes, { maxRetriesPerRequest: 1 });
  // A Redis outage empties the re-tiering panel (its note says why); the client's error events are not crashes.
  redis.on('error', () => undefined);
  const debt = new RedisTrustDebtStore(redis, { prefix: opts.prefix ?? cfg.redis.keyPrefix, dedupTtlSeconds: cfg.trustDebt.dedupTtlSeconds });
  return { retierQueue: () => debt.retierQueue(1000), close: () => redis.disconnect() };
}

export async function startDashboard(cfg: StewardConfig): Promise<RunningDashboard> {
  const store = new ReadOnlyClickHouseStore(cfg.clickhouse);
  const retier = retierQueueSource(cfg);
  const key = (cfg.ledgerSigning ?? cfg.signing)?.key;
  let keys: Map<string, KeyObject> | undefined;
  try {
    keys = key ? loadPublicKeys([key]) : undefined;
  } catch {
    keys = undefined; // the trace story then reports hash_only: the page still works
  }
  const server = new DashboardServer({ store, host: cfg.dashboard.host, port: cfg.dashboard.port, refreshMs: cfg.dashboard.refreshMs, allowedHosts: cfg.dashboard.allowedHosts, ledgerKeys: keys, retierQueue: retier.retierQueue });
  try {
    const port = await server.listen();
    return {
      port,
      async close() {
        await server.close();
        await store.close();
        retier.close();
      },
    };
  } catch (e) {
    await store.close();
    retier.close();
    throw e;
  }
}
