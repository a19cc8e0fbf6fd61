/**
 * The HTTP ingress's idempotency claims (src/adapters/redis/idempotency-claims.ts, docs/http.md "Idempotency") on
 * a single Redis and on the Redis Cluster: a retried batch, or its events re-batched differently, claims nothing
 * again; the previous bucket's keys still count; a release hands a claim back, also after the bucket turned; the
 * first claim of a new bucket unlinks the set from two buckets back; the sets expire.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../../src/adapters/redis/client.js';
import { redisIdempotencyClaims } from '../../../src/adapters/redis/idempotency-claims.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix } from '../setup/helpers.js';
import { clusterClient, deleteClusterPrefix } from './cluster.js';

const W = 3600;

async function exercise(redis: RedisClient, prefix: string): Promise<void> {
  // Real time (the sets' expiry is absolute, judged by Redis' clock), early in bucket b0.
  const b0 = Math.floor(Date.now() / 1000 / W) + 1;
  let nowMs = b0 * W * 1000 + 10_000;
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, now: () => nowMs, bucketClock: 'caller' });
  const keys = ['b1_t1', 'b1_t2', 'b1_t3'];
  expect(await claims.claim('agent-a', keys)).toEqual([true, true, true]);
  // The retried batch: all duplicates; re-batched with a new event and a repeated one inside the same call.
  expect(await claims.claim('agent-a', keys)).toEqual([false, false, false]);
  expect(await claims.claim('agent-a', ['b1_t4', 'b1_t2', 'b1_t4'])).toEqual([true, false, false]);
  // Keys are per agent; '' names no key and always passes.
  expect(await claims.claim('agent-b', ['b1_t1', '', ''])).toEqual([true, true, true]);
  // Next bucket: the previous bucket's keys still count, new ones are claimed in the new set.
  nowMs += W * 1000;
  expect(await claims.claim('agent-a', ['b1_t1', 'b2_t1'])).toEqual([false, true]);
  // A release after the bucket turned hands the claim back (it lives in the previous set).
  await claims.release('agent-a', ['b1_t3']);
  expect(await claims.claim('agent-a', ['b1_t3'])).toEqual([true]);
  await claims.release('agent-a', ['b1_t3', '']);
  expect(await claims.claim('agent-a', ['b1_t3'])).toEqual([true]);
  const tag = `${prefix}http:idem:{agent-a}:`;
  expect(await redis.exists(`${tag}${b0}`)).toBe(1);
  // Expiry: end of the bucket after next (unix seconds), so a set is consulted for two buckets.
  const ttl = await redis.ttl(`${tag}${b0 + 1}`);
  expect(ttl).toBeGreaterThan(0);
  expect(await redis.call('EXPIRETIME', `${tag}${b0 + 1}`)).toBe((b0 + 4) * W);
  // Two buckets on: bucket b0's set is gone (unlinked by the first claim of bucket b0 + 2), b0 + 1's keys still count.
  nowMs += W * 1000;
  expect(await claims.claim('agent-a', ['b2_t1', 'b3_t1'])).toEqual([false, true]);
  expect(await redis.exists(`${tag}${b0}`)).toBe(0);
  expect(await claims.claim('agent-a', ['b1_t1'])).toEqual([true]);
}

/** Two ingress replicas whose clocks are a bucket apart claim into Redis' bucket: a key one claimed is a duplicate for the other, and either can release it. */
async function skewedReplicas(redis: RedisClient, prefix: string): Promise<void> {
  const ahead = redisIdempotencyClaims(redis, { prefix, windowSeconds: W });
  const behind = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, now: () => Date.now() - W * 1000 });
  expect(await ahead.claim('agent-s', ['s1'])).toEqual([true]);
  // With its own clock the lagging replica looked in the two buckets before Redis' current one and claimed s1 again.
  expect(await behind.claim('agent-s', ['s1', 's2'])).toEqual([false, true]);
  expect(await ahead.claim('agent-s', ['s2'])).toEqual([false]);
  await behind.release('agent-s', ['s1']);
  await ahead.release('agent-s', ['s2']);
  expect(await ahead.claim('agent-s', ['s1', 's2'])).toEqual([true, true]);
  const [secs] = (await redis.call('TIME')) as [string, string];
  expect(await redis.exists(`${prefix}http:idem:{agent-s}:${Math.floor(Number(secs) / W)}`)).toBe(1);
}

describe('HTTP ingress idempotency claims', () => {
  const single = uniqueRedisPrefix('idem');
  const cluster = uniqueRedisPrefix('idem-cl');
  afterAll(async () => {
    const r = redisClient();
    await deleteRedisPrefix(r, single).catch(() => 0);
    r.disconnect();
    const c = await clusterClient();
    await deleteClusterPrefix(c, cluster).catch(() => undefined);
    c.disconnect();
  });

  it('on a single Redis', async () => {
    const r = createRedis(services().redisUrl, { enableAutoPipelining: false });
    try {
      await exercise(r, single);
      await skewedReplicas(r, single);
    } finally {
      r.disconnect();
    }
  });

  it('on a Redis Cluster (an agent\'s buckets share its hash tag)', async () => {
    const c = await clusterClient();
    try {
      await exercise(c, cluster);
      await skewedReplicas(c, cluster);
    } finally {
      c.disconnect();
    }
  });
});
