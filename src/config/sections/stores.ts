/** redis.*, clickhouse.*: the state store and the analytics store. */
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';

export interface StoresSection {
  /**
   * trustDebtReadCacheMs: how long the decision path reuses an agent's raw trust-debt state read from
   * Redis (decay is still computed at each event's time); 0 reads Redis for every decision.
   */
  redis: { url: string; keyPrefix: string; trustDebtReadCacheMs: number; clusterNodes: string[]; oomRetryMs: number };
  clickhouse: { url: string; database: string; username?: string; password?: string };
}

export function storesSection(raw: Raw): StoresSection {
  return {
    redis: { url: v(raw, 'redis.url'), keyPrefix: v(raw, 'redis.key_prefix'), trustDebtReadCacheMs: v(raw, 'redis.trust_debt_read_cache_ms'), clusterNodes: v(raw, 'redis.cluster_nodes'), oomRetryMs: v(raw, 'redis.oom_retry_ms') },
    clickhouse: { url: v(raw, 'clickhouse.url'), database: v(raw, 'clickhouse.database'), username: v(raw, 'clickhouse.username'), password: v(raw, 'clickhouse.password') },
  };
}
