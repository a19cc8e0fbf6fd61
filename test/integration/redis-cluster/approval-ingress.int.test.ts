/**
 * The HTTP ingress's approval store on a Redis Cluster (review finding 2 of issue #25): it must use the same
 * deployment as the approvals stage and its sweeper (redis.cluster_nodes), not the ingress's single connection
 * to redis.url — a master that does not own the `{ap}` slot answers MOVED to every approval script.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisApprovalStore } from '../../../src/adapters/redis/approval-store.js';
import { createRedis } from '../../../src/adapters/redis/client.js';
import type { ApprovalRequest } from '../../../src/engine/approvals/policy.js';
import { approvalRedis } from '../../../src/process/http-ingress.js';
import { uniqueRedisPrefix } from '../setup/helpers.js';
import { clusterClient, clusterNodes, deleteClusterPrefix } from './cluster.js';

const req = (id: string): ApprovalRequest => ({
  approval_id: id, tool: 'process_refund', agent_id: 'a1', tenant: 'acme', agent_tier: 'ACL-2', trace_id: `t-${id}`, event_id: `e-${id}`,
  job_id: null, skill_id: null, role: 'supervisor', default_action: 'deny', requested_ms: 1000, deadline_ms: Date.now() + 3_600_000, args: null,
});

/** A seed node that is not the master of the `{ap}` hash slot. */
async function nodeWithoutApprovalSlot(): Promise<string> {
  const seeds = clusterNodes().map((n) => n.replace(/^redis:\/\//, ''));
  const probe = new Redis(`redis://${seeds[0]}`);
  try {
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', '{ap}')) as number;
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const owner = ranges.find(([from, to]) => slot >= from && slot <= to)![2];
    // the masters differ by port (one host in this suite)
    const other = seeds.find((s) => !s.endsWith(`:${owner[1]}`));
    if (!other) throw new Error(`every seed is the {ap} owner ${owner.join(':')}`);
    return other;
  } finally {
    probe.disconnect();
  }
}

describe('HTTP ingress approval store on a Redis Cluster', () => {
  const prefix = uniqueRedisPrefix('ap-ingress');
  afterAll(async () => {
    const c = await clusterClient();
    await deleteClusterPrefix(c, prefix).catch(() => undefined);
    await c.quit().catch(() => c.disconnect());
  });

  it('reads and writes approvals whichever master redis.url names', async () => {
    const url = `redis://${await nodeWithoutApprovalSlot()}`;
    // What the ingress did before: one connection to redis.url — refused with MOVED for the {ap} slot.
    const single = createRedis(url, { maxRetriesPerRequest: 1 });
    try {
      await expect(new RedisApprovalStore(single, { prefix }).create(req('ap-single'), 1000)).rejects.toThrow(/MOVED/);
    } finally {
      single.disconnect();
    }
    const redis = approvalRedis({ redis: { url, clusterNodes: clusterNodes(), keyPrefix: prefix, trustDebtReadCacheMs: 0, oomRetryMs: 0 } });
    try {
      const store = new RedisApprovalStore(redis, { prefix });
      expect(await store.create(req('ap-cluster'), 1000)).toBe(true);
      expect((await store.request('ap-cluster'))?.approval_id).toBe('ap-cluster');
      expect((await store.status('ap-cluster'))?.status).toBe('pending');
    } finally {
      redis.disconnect();
    }
  });
});
