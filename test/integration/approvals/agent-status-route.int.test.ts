/**
 * GET /v1/approvals/{id} on the HTTP ingress (review finding 3 of issue #25, docs/approvals.md "Waiting"): an agent's
 * API key reads the status and outcome of its own approvals from the approval store on real Redis, so an agent over
 * HTTP needs no read of acgp.approvals (every tenant's requests); another agent's approval is 404 like an unknown one.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../src/adapters/http/ingress-server.js';
import { RedisApprovalStore } from '../../../src/adapters/redis/approval-store.js';
import { approvalStatusOf } from '../../../src/consumers/approvals.js';
import { apiKeyHash } from '../../../src/engine/approvals/approvers.js';
import { answeredOutcome } from '../../../src/engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../../src/engine/approvals/policy.js';
import { createAgentRegistry } from '../../../src/engine/blueprint/registry.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const req = (id: string, agent: string, tenant: string): ApprovalRequest => ({
  approval_id: id, tool: 'process_refund', agent_id: agent, tenant, agent_tier: 'ACL-2', trace_id: `t-${id}`, event_id: `e-${id}`,
  job_id: null, skill_id: null, role: 'supervisor', default_action: 'deny', requested_ms: 1000, deadline_ms: Date.now() + 3_600_000, args: { amount: 900 },
});

describe('GET /v1/approvals/{id}: an agent reads its own approvals (real Redis)', () => {
  const redis = redisClient();
  const prefix = uniqueRedisPrefix('ap-status');
  const store = new RedisApprovalStore(redis, { prefix });
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
  });

  it('pending, then the outcome, for its own agent only', async () => {
    const registry = createAgentRegistry([
      { id: 'agent-a', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true, apiKeys: [apiKeyHash('key-a')] },
      { id: 'agent-b', tenant: 'beta', tier: 'ACL-2', tools: [], domains: [], registered: true, apiKeys: [apiKeyHash('key-b')] },
    ]);
    const ingress = new HttpIngress({ host: '127.0.0.1', port: 0, maxBodyBytes: 65536 }, { registry: () => registry, publish: async () => undefined, approvalStatus: (id) => approvalStatusOf(store, id) });
    await ingress.ready();
    const get = (key: string, id: string) => ingress.app.inject({ method: 'GET', url: `/v1/approvals/${id}`, headers: { 'x-api-key': key } });
    try {
      const r = req('ap-a1', 'agent-a', 'acme');
      await store.create(r, 1000);
      const pending = await get('key-a', 'ap-a1');
      expect(pending.statusCode).toBe(200);
      expect(pending.json()).toEqual({ approval_id: 'ap-a1', status: 'pending', tool: 'process_refund', requested_ms: 1000, deadline_ms: r.deadline_ms });
      // another agent (another tenant) and an unknown id: the same 404
      expect((await get('key-b', 'ap-a1')).statusCode).toBe(404);
      expect((await get('key-a', 'ap-nothing')).statusCode).toBe(404);
      expect((await get('no-such-key', 'ap-a1')).statusCode).toBe(401);
      await store.resolve(answeredOutcome(r, { decision: 'approve', approver: 'alice', reason: 'ok' }, 'http', 5000), 5000);
      expect((await get('key-a', 'ap-a1')).json()).toMatchObject({ approval_id: 'ap-a1', status: 'approved', decision: 'approve', approver: 'alice', via: 'http', decided_ms: 5000 });
      expect((await get('key-b', 'ap-a1')).statusCode).toBe(404);
    } finally {
      await ingress.close();
    }
  });
});
