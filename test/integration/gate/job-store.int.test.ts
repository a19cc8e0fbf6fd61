// The finalization gate's job state in real Redis: compare-and-set keeps every concurrent writer's change,
// expiry runs on event time, and a restart (a new store on a new connection) sees the same state.
import { describe, expect, it } from 'vitest';
import { RedisGateJobStore } from '../../../src/adapters/redis/gate-job-store.js';
import { recordToolCall } from '../../../src/engine/gate/job-state.js';
import type { GateJobKey } from '../../../src/engine/gate/types.js';
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

  it('a value that is not a job state reads as absent instead of failing every answer', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisGateJobStore(redis, { prefix });
      await redis.set(store.key(key), '{not json');
      expect(await store.get(key, T0)).toBeUndefined();
      expect((await store.update(key, T0, (p) => recordToolCall(p, key, call(3), T0, 10))).evidence_count).toBe(1);
    });
  });
});
