/**
 * RedisStateRounds' maxOps split on the real (standalone) Redis: a turn with more operations than maxOps goes out
 * as several script calls, and one key's operations split across calls still apply in the order they were issued
 * (docs/pipeline.md "Batched state"). The rate-window count each hit answers is the number of hits on its key so
 * far, so an order kept answers 1, 2, 3, ... The cluster case uses the shared Redis Cluster profile (its helpers in
 * test/integration/redis-cluster), where a slot's calls leave in one pipeline.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStateRounds, type RoundOp } from '../../../src/adapters/redis/state-rounds.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';
import { withCluster } from '../redis-cluster/cluster.js';

const redis = redisClient();
const prefix = uniqueRedisPrefix('rounds-split');

afterAll(async () => {
  await deleteRedisPrefix(redis, prefix);
  redis.disconnect();
});

const hit = (key: string, i: number): RoundOp => ({ kind: 'h', key: `${prefix}${key}`, now: 1_000_000 + i, win: 60_000, hitId: `${key}-${i}`, keep: 120_000 });

describe('RedisStateRounds maxOps split (real Redis)', () => {
  it('7 hits on one key in one turn with maxOps 2: 4 script calls, counts in issue order', async () => {
    const rounds = new RedisStateRounds(redis, { maxOps: 2 });
    const counts = await Promise.all(Array.from({ length: 7 }, (_, i) => rounds.run(hit('one', i))));
    expect(counts).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(rounds.calls).toBe(4);
    expect(rounds.ops).toBe(7);
  });

  it('two keys interleaved with a read, maxOps 2: each key keeps its order across calls', async () => {
    const rounds = new RedisStateRounds(redis, { maxOps: 2 });
    const ops: RoundOp[] = [hit('a', 0), hit('b', 0), hit('a', 1), { kind: 'r', key: `${prefix}td` }, hit('b', 1), hit('a', 2), hit('b', 2)];
    const got = await Promise.all(ops.map((op) => rounds.run(op)));
    expect(got).toEqual([1, 1, 2, [null, null, null, null, null, null], 2, 3, 3]);
    expect(rounds.calls).toBe(4);
    // the next turn is a round of its own: one call for one operation, the key's count carried on
    expect(await rounds.run(hit('a', 3))).toBe(4);
    expect(rounds.calls).toBe(5);
  });

  it('without the split (maxOps above the turn) the same turn is one call', async () => {
    const rounds = new RedisStateRounds(redis, { maxOps: 512 });
    const counts = await Promise.all(Array.from({ length: 7 }, (_, i) => rounds.run(hit('big', i))));
    expect(counts).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(rounds.calls).toBe(1);
  });

  it("on a Redis Cluster, maxOps 2: a slot's operations go as several calls in one pipeline, in issue order", async () => {
    await withCluster(async (c, clPrefix) => {
      const rounds = new RedisStateRounds(c, { maxOps: 2 });
      // two agents' keys ({hash tags}: one slot each), interleaved as a chunk's lanes issue them
      const h = (agent: string, i: number): RoundOp => ({ kind: 'h', key: `${clPrefix}{${agent}}:rate`, now: 1_000_000 + i, win: 60_000, hitId: `${agent}-${i}`, keep: 120_000 });
      const ops = [h('x', 0), h('y', 0), h('x', 1), h('x', 2), h('y', 1), h('x', 3), h('x', 4)];
      expect(await Promise.all(ops.map((op) => rounds.run(op)))).toEqual([1, 1, 2, 3, 2, 4, 5]);
      // x: 5 operations in 3 calls, y: 2 in 1
      expect(rounds.calls).toBe(4);
    });
  }, 60_000);
});
