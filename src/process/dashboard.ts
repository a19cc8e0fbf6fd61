/**
 * The analyst dashboard inside `steward run` (docs/dashboard.md), when dashboard.enabled: the same server
 * `steward dashboard` starts, on the process's ClickHouse through the read-only client, the re-tiering queue
 * from its Redis, and ledger entries verified with the key the sink signs them with.
 */
import type { KeyObject } from 'node:crypto';
import { loadPublicKeys } from '../adapters/clickhouse/ledger-keys.js';
import { ReadOnlyClickHouseStore } from '../adapters/dashboard/read-only-store.js';
import { DashboardServer } from '../adapters/dashboard/server.js';
import { createRedis } from '../adapters/redis/client.js';
import { RedisTrustDebtStore } from '../adapters/redis/trust-debt-store.js';
import type { StewardConfig } from '../config/steward-config.js';

export interface RunningDashboard {
  port: number;
  close(): Promise<void>;
}

export async function startDashboard(cfg: StewardConfig): Promise<RunningDashboard> {
  const store = new ReadOnlyClickHouseStore(cfg.clickhouse);
  const redis = createRedis(cfg.redis.url, { maxRetriesPerRequest: 1 });
  // A Redis outage empties the re-tiering panel (its note says why); the client's error events are not crashes.
  redis.on('error', () => undefined);
  const debt = new RedisTrustDebtStore(redis, { prefix: cfg.redis.keyPrefix, dedupTtlSeconds: cfg.trustDebt.dedupTtlSeconds });
  const key = (cfg.ledgerSigning ?? cfg.signing)?.key;
  let keys: Map<string, KeyObject> | undefined;
  try {
    keys = key ? loadPublicKeys([key]) : undefined;
  } catch {
    keys = undefined; // the trace story then reports hash_only: the page still works
  }
  const server = new DashboardServer({ store, host: cfg.dashboard.host, port: cfg.dashboard.port, refreshMs: cfg.dashboard.refreshMs, allowedHosts: cfg.dashboard.allowedHosts, ledgerKeys: keys, retierQueue: () => debt.retierQueue(1000) });
  try {
    const port = await server.listen();
    return {
      port,
      async close() {
        await server.close();
        await store.close();
        redis.disconnect();
      },
    };
  } catch (e) {
    await store.close();
    redis.disconnect();
    throw e;
  }
}
