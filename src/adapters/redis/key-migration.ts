/**
 * One-off move of a deployment's trust-debt keys from the single global keys of builds before spec-decisions D28
 * to their per-slot names (docs/pipeline.md "Redis Cluster", migration): the known-agents set, the re-tiering
 * queue and the audit outbox are split by agent into the copies of the agents' slots, remediation requests
 * move under the `{rem}` tag. Agent hashes and dedup keys keep their names. Idempotent: a second run finds
 * nothing left to move. Run it with every Steward process of the deployment stopped (a write to a legacy key
 * during the move could be left behind); rate windows are not moved (they expire within their window).
 */
import type { RedisClient } from './client.js';
import { globEscape, scanKeys } from './client.js';
import type { RedisTrustDebtStore } from './trust-debt-store.js';

export interface KeyMigrationReport {
  knownAgents: number;
  retierEntries: number;
  outboxEntries: number;
  remediationRequests: number;
  pendingRemediations: number;
}

export async function migrateTrustDebtKeysToSlots(redis: RedisClient, store: RedisTrustDebtStore): Promise<KeyMigrationReport> {
  const p = store.prefix;
  const report: KeyMigrationReport = { knownAgents: 0, retierEntries: 0, outboxEntries: 0, remediationRequests: 0, pendingRemediations: 0 };

  const agents = `${p}td-agents`;
  if ((await redis.exists(agents)) === 1) {
    for (const m of await redis.smembers(agents)) {
      const [tenant, agentId] = JSON.parse(m) as [string, string];
      await redis.sadd(store.agentsKeyFor(tenant, agentId), m);
      report.knownAgents++;
    }
    await redis.del(agents);
  }
  // Lists keep their order within each slot's copy (appended in the legacy order).
  for (const [legacy, keyFor, count] of [
    [`${p}retier-queue`, (o: Record<string, string>) => store.retierKeyFor(o.tenant!, o.agentId!), 'retierEntries'],
    [`${p}td-audit-outbox`, (o: Record<string, string>) => store.auditOutboxKeyFor(o.tenant!, o.agent!), 'outboxEntries'],
  ] as const) {
    if ((await redis.exists(legacy)) !== 1) continue;
    for (const s of await redis.lrange(legacy, 0, -1)) {
      await redis.rpush(keyFor(JSON.parse(s) as Record<string, string>), s);
      report[count]++;
    }
    await redis.del(legacy);
  }

  const pending = `${p}td-rem-pending`;
  if ((await redis.exists(pending)) === 1) {
    const flat = await redis.zrange(pending, 0, -1, 'WITHSCORES');
    for (let i = 0; i + 1 < flat.length; i += 2) {
      await redis.zadd(`${p}td-rem-pending:{rem}`, flat[i + 1]!, flat[i]!);
      report.pendingRemediations++;
    }
    await redis.del(pending);
  }
  for (const k of await scanKeys(redis, `${globEscape(p)}td-rem:*`)) {
    const rest = k.slice(`${p}td-rem:`.length);
    if (rest.startsWith('{rem}:')) continue;
    const h = await redis.hgetall(k);
    if (Object.keys(h).length > 0) await redis.hset(`${p}td-rem:{rem}:${rest}`, h);
    await redis.del(k);
    report.remediationRequests++;
  }
  return report;
}
