// The finalization gate's job state in real Redis: compare-and-set keeps every concurrent writer's change,
// expiry runs on event time, and a restart (a new store on a new connection) sees the same state.
import { describe, expect, it } from 'vitest';
import { RedisGateJobStore } from '../../../src/adapters/redis/gate-job-store.js';
import { FinalizationGate } from '../../../src/engine/gate/index.js';
import { setRewriteOnly } from '../../../src/engine/gate/agent-index.js';
import { recordToolCall } from '../../../src/engine/gate/job-state.js';
import type { GateJobKey } from '../../../src/engine/gate/types.js';
import type { AgentInfo, Trace } from '../../../src/engine/types.js';
import { compileOne } from '../../unit/engine/gate/helpers.js';
import { redisClient, withRedis } from '../setup/helpers.js';

const T0 = Date.parse('2026-05-01T00:00:00Z');
const key: GateJobKey = { tenant: 'acme', agentId: 'coder:1', jobId: 'job{1}' };
const call = (i: number, blocked = false) => ({ event_id: `e-${i}`, tool: `t${i % 3}`, ts_ms: T0 + i, blocked });

describe('RedisGateJobStore (real Redis)', () => {
  it('three connections recording tool calls at once lose none of them', async () => {
    await withRedis(async (redis, prefix) => {
      const conns = [redis, redisClient(), redisClient()];
      try {
        const stores = conns.map((c) => new RedisGateJobStore(c, { prefix }));
        await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 3]!.update(key, T0 + i, (prev) => recordToolCall(prev, key, call(i, i % 10 === 0), T0 + i, 1000))));
        const s = await stores[1]!.get(key, T0 + 100);
        expect(s?.tool_calls.map((c) => c.event_id).sort()).toEqual(Array.from({ length: 60 }, (_, i) => `e-${i}`).sort());
        expect(s?.evidence_count).toBe(54);
        // the key keeps the agent in a hash tag (one Redis Cluster slot per agent), ids escaped
        expect(await redis.exists(`${prefix}gate:{acme:coder%3A1}:job%7B1%7D`)).toBe(1);
      } finally {
        for (const c of conns.slice(1)) await c.quit();
      }
    });
  });

  it('the reads and writes of one turn leave as one script call; each gets its own answer, as unbatched', async () => {
    await withRedis(async (redis, prefix) => {
      const batched = new RedisGateJobStore(redis, { prefix: `${prefix}b:` });
      const single = new RedisGateJobStore(redis, { prefix: `${prefix}s:`, batch: false });
      const keys = Array.from({ length: 40 }, (_, i): GateJobKey => ({ tenant: 'acme', agentId: `coder-${i % 7}`, jobId: `job-${i}` }));
      // as the gate stage's lanes do: read every job in one turn, then record on each
      const run = async (store: RedisGateJobStore) => {
        await store.update(keys[3]!, T0, (p) => recordToolCall(p, keys[3]!, call(0), T0, 10));
        const before = await Promise.all(keys.map((k) => store.get(k, T0 + 1)));
        const after = await Promise.all(keys.map((k, i) => store.update(k, T0 + 2, (p) => recordToolCall(p, k, call(i + 1, i % 5 === 0), T0 + 2, 10))));
        return { before, after, again: await Promise.all(keys.map((k) => store.get(k, T0 + 3))) };
      };
      const a = await run(batched);
      const b = await run(single);
      expect(a).toEqual(b);
      expect(a.before.filter(Boolean)).toHaveLength(1);
      expect(a.again[3]?.tool_calls.map((c) => c.event_id)).toEqual(['e-0', 'e-4']);
      // the first update's read and write (2 calls), then 40 reads in one call, 40 compare-and-sets (starting from
      // the remembered reads) in one call, 40 reads in one call
      expect(batched.rounds).toEqual({ calls: 5, ops: 122 });
      expect(single.rounds).toEqual({ calls: 0, ops: 0 });
    });
  });

  it('an operation that fails in a round fails alone: the other jobs of the round are answered', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisGateJobStore(redis, { prefix });
      const bad: GateJobKey = { ...key, jobId: 'not-a-string-key' };
      await redis.hset(store.key(bad), 'x', '1');
      const [a, b, c] = await Promise.allSettled([store.get(key, T0), store.get(bad, T0), store.update(key, T0, (p) => recordToolCall(p, key, call(1), T0, 10))]);
      expect(a).toMatchObject({ status: 'fulfilled', value: undefined });
      expect(b).toMatchObject({ status: 'rejected', reason: { code: 'STEWARD_STATE_UNAVAILABLE' } });
      expect(c).toMatchObject({ status: 'fulfilled', value: { evidence_count: 1 } });
      expect(store.rounds.calls).toBeLessThanOrEqual(3);
    });
  });

  it('an update that changes nothing writes nothing; a recorded event id is not recorded twice', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisGateJobStore(redis, { prefix });
      const a = await store.update(key, T0, (p) => recordToolCall(p, key, call(1), T0, 10));
      const b = await store.update(key, T0 + 5, (p) => recordToolCall(p, key, call(1), T0 + 5, 10));
      expect(b).toEqual(a);
      expect((await store.get(key, T0 + 5))?.tool_calls).toHaveLength(1);
    });
  });

  it('expires on event time: idle longer than the TTL at the event time reads as a new job; a new store sees the state', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisGateJobStore(redis, { prefix, ttlMs: 60_000 });
      await store.update(key, T0, (p) => recordToolCall(p, key, call(1), T0, 10));
      const other = redisClient();
      try {
        const restarted = new RedisGateJobStore(other, { prefix, ttlMs: 60_000 });
        expect((await restarted.get(key, T0 + 60_000))?.evidence_count).toBe(1);
        expect(await restarted.get(key, T0 + 60_001)).toBeUndefined();
        const fresh = await restarted.update(key, T0 + 120_000, (p) => recordToolCall(p, key, call(2), T0 + 120_000, 10));
        expect(fresh.tool_calls.map((c) => c.event_id)).toEqual(['e-2']);
      } finally {
        await other.quit();
      }
    });
  });

  it('a workflow step stays done after 70 later calls, across connections, and in a state an earlier build wrote', async () => {
    await withRedis(async (redis, prefix) => {
      const bp = compileOne('id: w@1.0\nversion: "1.0.0"\ndescription: w\nguardrails:\n  - id: verify_then_access\n    tier: 2\n    workflow: { steps: [verify_identity, access_account], required: true }\n');
      const agent: AgentInfo = { id: 'coder:1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
      const tc = (job: string, tool: string, i: number): Trace => ({ trace_id: `${job}-${i}`, agent_id: agent.id, timestamp: new Date(T0 + i).toISOString(), hook: 'tool_call', job_id: job, tool, args: {} });
      const fa = (job: string): Trace => ({ trace_id: `${job}-fa`, agent_id: agent.id, timestamp: new Date(T0 + 500).toISOString(), hook: 'final_answer', job_id: job, draft_answer: 'done' });
      const other = redisClient();
      try {
        const gates = [redis, other].map((c) => new FinalizationGate({ jobStore: new RedisGateJobStore(c, { prefix }) }));
        await gates[0]!.recordToolCall(tc('job-a', 'verify_identity', 0), agent, T0, 'a-0', true, bp);
        // 70 other calls from two connections at once (compare-and-set): the step is not lost in the races either
        await Promise.all(Array.from({ length: 70 }, (_, i) => gates[i % 2]!.recordToolCall(tc('job-a', 'search_kb', i + 1), agent, T0 + i + 1, `a-${i + 1}`, true, bp)));
        const s = await new RedisGateJobStore(redis, { prefix }).get({ tenant: 'acme', agentId: agent.id, jobId: 'job-a' }, T0 + 100);
        expect(s?.tool_calls).toHaveLength(64);
        expect(s?.steps_done).toEqual([['verify_identity']]);
        expect((await gates[1]!.checkToolCall(tc('job-a', 'access_account', 99), agent, bp, T0 + 100)).intervention).toBe('ok');
        await gates[1]!.recordToolCall(tc('job-a', 'access_account', 99), agent, T0 + 100, 'a-99', true, bp);
        expect(await gates[0]!.finalize(fa('job-a'), agent, bp, T0 + 500, 'a-fa')).toMatchObject({ verdict: 'PASS', action: 'finalize' });

        // A state without steps_done (as an earlier build wrote it): read from its calls, then kept past them.
        const oldKey: GateJobKey = { tenant: 'acme', agentId: agent.id, jobId: 'job-b' };
        const store = new RedisGateJobStore(redis, { prefix });
        await store.update(oldKey, T0, (p) => recordToolCall(p, oldKey, { event_id: 'b-0', tool: 'verify_identity', ts_ms: T0, blocked: false }, T0, 64));
        expect(JSON.stringify(await store.get(oldKey, T0))).not.toContain('steps_done');
        for (let i = 1; i <= 70; i++) await gates[i % 2]!.recordToolCall(tc('job-b', 'search_kb', i), agent, T0 + i, `b-${i}`, true, bp);
        expect((await gates[0]!.checkToolCall(tc('job-b', 'access_account', 99), agent, bp, T0 + 100)).intervention).toBe('ok');
        // Without a first step the order still holds after many calls.
        for (let i = 1; i <= 70; i++) await gates[0]!.recordToolCall(tc('job-c', 'search_kb', i), agent, T0 + i, `c-${i}`, true, bp);
        expect((await gates[0]!.checkToolCall(tc('job-c', 'access_account', 99), agent, bp, T0 + 100)).intervention).toBe('block');
      } finally {
        await other.quit();
      }
    });
  });

  it('a value that is not a job state reads as absent instead of failing every answer', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisGateJobStore(redis, { prefix });
      await redis.set(store.key(key), '{not json');
      expect(await store.get(key, T0)).toBeUndefined();
      expect((await store.update(key, T0, (p) => recordToolCall(p, key, call(3), T0, 10))).evidence_count).toBe(1);
    });
  });

  it("the agent's index of rewrite-only jobs (D45): beside its jobs in the agent's slot, shared by two connections, expiring on event time", async () => {
    await withRedis(async (redis, prefix) => {
      const other = redisClient();
      try {
        const a = { tenant: key.tenant, agentId: key.agentId };
        const stores = [new RedisGateJobStore(redis, { prefix, ttlMs: 60_000 }), new RedisGateJobStore(other, { prefix, ttlMs: 60_000 })];
        expect(stores[0]!.agentKey(a)).toBe(`${prefix}gate-agent:{acme:coder%3A1}`);
        expect(stores[0]!.key(key).startsWith(`${prefix}gate:{acme:coder%3A1}:`)).toBe(true);
        await Promise.all(['j1', 'j2', 'j3', 'j4'].map((j, i) => stores[i % 2]!.updateAgent(a, T0 + i, (p) => setRewriteOnly(p, j, T0 + i, T0 + i))));
        expect(Object.keys((await stores[1]!.getAgent(a, T0 + 10))!.rewrite_only).sort()).toEqual(['j1', 'j2', 'j3', 'j4']);
        await stores[1]!.updateAgent(a, T0 + 20, (p) => setRewriteOnly(p, 'j2', null, T0 + 20));
        expect(Object.keys((await stores[0]!.getAgent(a, T0 + 30))!.rewrite_only).sort()).toEqual(['j1', 'j3', 'j4']);
        expect(await stores[0]!.getAgent(a, T0 + 20 + 60_001)).toBeUndefined();
      } finally {
        await other.quit();
      }
    });
  });

  it("a job-less tool call's index read is reused for agentReadCacheMs: another process's directive is seen after it, this process's own at once", async () => {
    await withRedis(async (redis, prefix) => {
      const other = redisClient();
      try {
        const a = { tenant: key.tenant, agentId: key.agentId };
        let wall = 1_000;
        const reader = new RedisGateJobStore(redis, { prefix, agentReadCacheMs: 250, nowMs: () => wall });
        const writer = new RedisGateJobStore(other, { prefix });
        expect(await reader.getAgent(a, T0)).toBeUndefined();
        await writer.updateAgent(a, T0 + 1, (p) => setRewriteOnly(p, 'j1', T0 + 1, T0 + 1));
        wall += 249;
        expect(await reader.getAgent(a, T0 + 2)).toBeUndefined(); // the read of 249 ms ago
        wall += 1;
        expect(Object.keys((await reader.getAgent(a, T0 + 3))!.rewrite_only)).toEqual(['j1']);
        // Expiry stays on event time, also for a reused read.
        expect(await reader.getAgent(a, T0 + 1 + 24 * 3_600_000 + 1)).toBeUndefined();
        // The reader's own write is seen at once.
        await reader.updateAgent(a, T0 + 4, (p) => setRewriteOnly(p, 'j1', null, T0 + 4));
        expect(Object.keys((await reader.getAgent(a, T0 + 5))!.rewrite_only)).toEqual([]);
        // 0: every call reads Redis.
        const fresh = new RedisGateJobStore(redis, { prefix, agentReadCacheMs: 0 });
        expect(Object.keys((await fresh.getAgent(a, T0 + 6))!.rewrite_only)).toEqual([]);
        await writer.updateAgent(a, T0 + 7, (p) => setRewriteOnly(p, 'j2', T0 + 7, T0 + 7));
        expect(Object.keys((await fresh.getAgent(a, T0 + 8))!.rewrite_only)).toEqual(['j2']);
      } finally {
        await other.quit();
      }
    });
  });
});
