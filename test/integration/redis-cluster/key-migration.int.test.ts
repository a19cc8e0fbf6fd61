/** spec-decisions D28 migration: legacy global trust-debt keys move to their per-slot names and stay usable. */
import { describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { migrateTrustDebtKeysToSlots } from '../../../src/adapters/redis/key-migration.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { withRedis } from '../setup/helpers.js';

describe('trust-debt key migration to per-slot keys', () => {
  it('moves known agents, the re-tiering queue, the audit outbox and remediation requests; a second run moves nothing', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisTrustDebtStore(redis, { prefix });
      // What a build before D28 left behind (same values, global key names).
      await redis.sadd(`${prefix}td-agents`, JSON.stringify(['acme', 'a1']), JSON.stringify(['acme', 'a2']));
      await redis.rpush(`${prefix}retier-queue`, JSON.stringify({ tenant: 'acme', agentId: 'a1', eventId: 'e1', atMs: '1000', debt: '0.9' }), JSON.stringify({ tenant: 'acme', agentId: 'a2', eventId: 'e2', atMs: '2000', debt: '0.95' }));
      await redis.rpush(`${prefix}td-audit-outbox`, JSON.stringify({ tenant: 'acme', agent: 'a2', p: 'good_behavior_audit|3000|0.5|0.3|normal|elevated_monitoring' }));
      await redis.hset(`${prefix}td-rem:r-1`, { requestId: 'r-1', tenant: 'acme', agentId: 'a1', reason: 'fixed', atMs: '1500', status: 'pending' });
      await redis.zadd(`${prefix}td-rem-pending`, 1500, 'r-1');

      expect(await migrateTrustDebtKeysToSlots(redis, store)).toEqual({ knownAgents: 2, retierEntries: 2, outboxEntries: 1, remediationRequests: 1, pendingRemediations: 1 });
      expect(await store.knownAgents()).toEqual([['acme', 'a1'], ['acme', 'a2']]);
      expect((await store.retierQueue()).map((r) => r.eventId)).toEqual(['e1', 'e2']);
      expect(await store.auditOutboxLength()).toBe(1);
      expect((await store.pendingRemediations()).map((r) => r.requestId)).toEqual(['r-1']);
      const { request } = await store.decideRemediation('r-1', 'deny', { reviewer: 'ops', atMs: 2000 }, DEFAULT_TRUST_DEBT_CONFIG);
      expect(request.status).toBe('denied');
      for (const k of ['td-agents', 'retier-queue', 'td-audit-outbox', 'td-rem:r-1', 'td-rem-pending']) expect(await redis.exists(`${prefix}${k}`)).toBe(0);
      expect(await migrateTrustDebtKeysToSlots(redis, store)).toEqual({ knownAgents: 0, retierEntries: 0, outboxEntries: 0, remediationRequests: 0, pendingRemediations: 0 });
    });
  });
});
