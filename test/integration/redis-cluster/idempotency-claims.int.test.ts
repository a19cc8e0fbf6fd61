/**
 * The HTTP ingress's idempotency claims (src/adapters/redis/idempotency-claims.ts, docs/http.md "Idempotency") on
 * a single Redis and on the Redis Cluster: a key claimed is pending (never a duplicate) until finalised, then done;
 * a retried batch, or its events re-batched differently, claims nothing done again; the previous bucket's keys still
 * count; a release hands back only its own claim, also after the bucket turned; a pending claim older than the bound
 * is claimed again; the first finalise of a new bucket unlinks the set from two buckets back; the sets expire.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../../src/adapters/redis/client.js';
import { redisIdempotencyClaims } from '../../../src/adapters/redis/idempotency-claims.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix } from '../setup/helpers.js';
import { clusterClient, deleteClusterPrefix } from './cluster.js';

const W = 3600;

const states = (s: string) => [...s].map((c) => ({ c: 'claimed', d: 'done', p: 'pending' })[c as 'c' | 'd' | 'p']);

async function exercise(redis: RedisClient, prefix: string): Promise<void> {
  // Real time (the sets' expiry is absolute, judged by Redis' clock), early in bucket b0.
  const b0 = Math.floor(Date.now() / 1000 / W) + 1;
  let nowMs = b0 * W * 1000 + 10_000;
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, now: () => nowMs, bucketClock: 'caller' });
  const keys = ['b1_t1', 'b1_t2', 'b1_t3'];
  const first = await claims.claim('agent-a', keys);
  expect(first.states).toEqual(states('ccc'));
  // The retry while the first send is in flight: pending, never a duplicate.
  expect((await claims.claim('agent-a', keys)).states).toEqual(states('ppp'));
  await claims.finalise('agent-a', keys, first.id);
  // Produced: now duplicates; re-batched with a new event and a repeated one inside the same call.
  expect((await claims.claim('agent-a', keys)).states).toEqual(states('ddd'));
  const t4 = await claims.claim('agent-a', ['b1_t4', 'b1_t2', 'b1_t4']);
  expect(t4.states).toEqual(states('cdd'));
  // Keys are per agent; '' names no key and always passes.
  expect((await claims.claim('agent-b', ['b1_t1', '', ''])).states).toEqual(states('ccc'));
  // A failed send's release hands its claim back: the retry claims it.
  await claims.release('agent-a', ['b1_t4'], t4.id);
  const t4again = await claims.claim('agent-a', ['b1_t4']);
  expect(t4again.states).toEqual(states('c'));
  // A release names its claim: the earlier claim's (stale) release leaves the new claim pending.
  await claims.release('agent-a', ['b1_t4'], t4.id);
  expect((await claims.claim('agent-a', ['b1_t4'])).states).toEqual(states('p'));
  // Next bucket: the previous bucket's done keys still count; a pending key claimed before the turn is released
  // after it (pending entries are not bucketed) and claimed again.
  nowMs += W * 1000;
  await claims.release('agent-a', ['b1_t4', ''], t4again.id);
  const b2 = await claims.claim('agent-a', ['b1_t1', 'b2_t1', 'b1_t4']);
  expect(b2.states).toEqual(states('dcc'));
  await claims.finalise('agent-a', ['b2_t1', 'b1_t4'], b2.id);
  const tag = `${prefix}http:idem:{agent-a}:`;
  expect(await redis.exists(`${tag}${b0}`)).toBe(1);
  expect(await redis.zcard(`${tag}pending`)).toBe(0);
  // A settled claim leaves no record: b2's went with its finalise, t4again's with its release.
  expect(await redis.zscore(`${tag}claims`, b2.id)).toBe(null);
  expect(await redis.zscore(`${tag}claims`, t4again.id)).toBe(null);
  // Expiry: end of the bucket after next (unix seconds), so a set is consulted for two buckets.
  expect(await redis.ttl(`${tag}${b0 + 1}`)).toBeGreaterThan(0);
  expect(await redis.call('EXPIRETIME', `${tag}${b0 + 1}`)).toBe((b0 + 4) * W);
  // Two buckets on: bucket b0's set is gone (unlinked by the first finalise of bucket b0 + 2), b0 + 1's keys still count.
  nowMs += W * 1000;
  const b3 = await claims.claim('agent-a', ['b2_t1', 'b3_t1']);
  expect(b3.states).toEqual(states('dc'));
  await claims.finalise('agent-a', ['b3_t1'], b3.id);
  expect(await redis.exists(`${tag}${b0}`)).toBe(0);
  const again = await claims.claim('agent-a', ['b1_t1']);
  expect(again.states).toEqual(states('c'));
  await claims.release('agent-a', ['b1_t1'], again.id);
}

/** A pending claim older than the bound counts as unclaimed (an ingress that crashed between claim and finalise). */
async function stalePending(redis: RedisClient, prefix: string): Promise<void> {
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, pendingStaleMs: 300 });
  const crashed = await claims.claim('agent-p', ['p1', 'p2']);
  expect(crashed.states).toEqual(states('cc'));
  expect((await claims.claim('agent-p', ['p1', 'p3'])).states).toEqual(states('pc'));
  await new Promise((r) => setTimeout(r, 450));
  // p1, p2 are stale: claimed again; p3 (claimed ~450 ms ago too) likewise.
  const retry = await claims.claim('agent-p', ['p1', 'p2', 'p3']);
  expect(retry.states).toEqual(states('ccc'));
  // The crashed claim's late release does not hand back the new claim's entries.
  await claims.release('agent-p', ['p1', 'p2'], crashed.id);
  expect((await claims.claim('agent-p', ['p1', 'p2'])).states).toEqual(states('pp'));
  await claims.finalise('agent-p', ['p1', 'p2', 'p3'], retry.id);
  expect((await claims.claim('agent-p', ['p1', 'p2', 'p3'])).states).toEqual(states('ddd'));
  // The pending set expires with its last claim's bound.
  const pttl = await redis.pttl(`${prefix}http:idem:{agent-p}:pending`);
  expect(pttl === -2 || pttl <= 300).toBe(true);
}

/**
 * A claim run twice under one id (a command ioredis or the Cluster client re-sent: test/integration/faults/
 * claim-resend.int.test.ts drops a real reply) answers the same both times, keys another claim took meanwhile
 * stay pending, and a key released meanwhile is taken under the first run's time (the release finds it).
 */
async function reRun(redis: RedisClient, prefix: string): Promise<void> {
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W });
  const other = await claims.claim('agent-r', ['r3']);
  const first = await claims.claim('agent-r', ['r1', 'r2', 'r1', 'r3'], 'claim-x');
  expect(first.states).toEqual(states('ccdp'));
  await claims.release('agent-r', ['r3'], other.id);
  expect((await claims.claim('agent-r', ['r1', 'r2', 'r1', 'r3'], 'claim-x')).states).toEqual(states('ccdc'));
  expect((await claims.claim('agent-r', ['r1', 'r3'])).states).toEqual(states('pp'));
  await claims.finalise('agent-r', ['r1'], 'claim-x');
  // The record stays while r2, r3 are pending under it; its release frees both, then the record goes.
  expect(await redis.zscore(`${prefix}http:idem:{agent-r}:claims`, 'claim-x')).not.toBe(null);
  await claims.release('agent-r', ['r2', 'r3'], 'claim-x');
  expect(await redis.zcard(`${prefix}http:idem:{agent-r}:pending`)).toBe(0);
  expect(await redis.exists(`${prefix}http:idem:{agent-r}:claims`)).toBe(0);
  expect((await claims.claim('agent-r', ['r1', 'r2'])).states).toEqual(states('dc'));
}

/** Two ingress replicas whose clocks are a bucket apart claim into Redis' bucket: a key one produced is a duplicate for the other, and either can release it. */
async function skewedReplicas(redis: RedisClient, prefix: string): Promise<void> {
  const ahead = redisIdempotencyClaims(redis, { prefix, windowSeconds: W });
  const behind = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, now: () => Date.now() - W * 1000 });
  const a1 = await ahead.claim('agent-s', ['s1']);
  expect(a1.states).toEqual(states('c'));
  await ahead.finalise('agent-s', ['s1'], a1.id);
  // With its own clock the lagging replica looked in the two buckets before Redis' current one and claimed s1 again.
  const b = await behind.claim('agent-s', ['s1', 's2']);
  expect(b.states).toEqual(states('dc'));
  expect((await ahead.claim('agent-s', ['s2'])).states).toEqual(states('p'));
  await behind.release('agent-s', ['s2'], b.id);
  const a2 = await ahead.claim('agent-s', ['s2']);
  expect(a2.states).toEqual(states('c'));
  await ahead.finalise('agent-s', ['s2'], a2.id);
  expect((await behind.claim('agent-s', ['s1', 's2'])).states).toEqual(states('dd'));
  const [secs] = (await redis.call('TIME')) as [string, string];
  expect(await redis.exists(`${prefix}http:idem:{agent-s}:${Math.floor(Number(secs) / W)}`)).toBe(1);
}

/**
 * Groups (D48): a batch in the acgp client's form (keys `<H>_<suffix>`, H the batch key) is one hash field, not a
 * key per event; its events are found as well by a batch under another key, and a group seen before, or a prefix
 * claimed per key, sends the batch down the per-key path.
 */
async function grouped(redis: RedisClient, prefix: string): Promise<void> {
  const b0 = Math.floor(Date.now() / 1000 / W) + 1;
  let nowMs = b0 * W * 1000 + 10_000;
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, now: () => nowMs, bucketClock: 'caller' });
  const tag = `${prefix}http:idem:{agent-g}:`;
  // A fresh batch: one field in the group pending hash, nothing per key; a repeated key inside the call is a duplicate.
  const g1 = await claims.claim('agent-g', ['B1_t1', 'B1_t2', 'B1_t2'], undefined, 'B1');
  expect(g1.states).toEqual(states('ccd'));
  expect(await redis.hexists(`${tag}gpending`, 'B1')).toBe(1);
  expect(await redis.exists(`${tag}pending`)).toBe(0);
  // Its retry while the send is in flight: pending, never a duplicate.
  expect((await claims.claim('agent-g', ['B1_t1', 'B1_t2'], undefined, 'B1')).states).toEqual(states('pp'));
  await claims.finalise('agent-g', ['B1_t1', 'B1_t2'], g1.id, 'B1');
  expect(await redis.hexists(`${tag}gpending`, 'B1')).toBe(0);
  expect(await redis.hget(`${tag}g${b0}`, 'B1')).toBe('\nt1\nt2\n');
  expect(await redis.zscore(`${tag}claims`, g1.id)).toBe(null);
  expect((await claims.claim('agent-g', ['B1_t1', 'B1_t2'], undefined, 'B1')).states).toEqual(states('dd'));
  // Re-batched under another key: the group's events are duplicates; a new event of prefix B1 is claimed per key.
  const c9 = await claims.claim('agent-g', ['B1_t2', 'B1_t3', 'x'], undefined, 'C9');
  expect(c9.states).toEqual(states('dcc'));
  expect(await redis.sismember(`${tag}p${b0}`, 'B1')).toBe(1);
  // B1 again: down the per-key path, which sees B1_t3 pending under c9 and the group's t1 done.
  const again = await claims.claim('agent-g', ['B1_t3', 'B1_t4', 'B1_t1'], undefined, 'B1');
  expect(again.states).toEqual(states('pcd'));
  await claims.release('agent-g', ['B1_t3', 'x'], c9.id, 'C9');
  const t3 = await claims.claim('agent-g', ['B1_t3'], undefined, 'B1');
  expect(t3.states).toEqual(states('c'));
  await claims.finalise('agent-g', ['B1_t3'], t3.id, 'B1');
  await claims.finalise('agent-g', ['B1_t4'], again.id, 'B1');
  expect((await claims.claim('agent-g', ['B1_t3', 'B1_t4', 'B1_t5'], undefined, 'Z1')).states).toEqual(states('ddc'));
  // A claim run twice under one id answers the same; its release hands the group back, and its record goes.
  expect((await claims.claim('agent-g', ['D1_a', 'D1_b'], 'claim-g', 'D1')).states).toEqual(states('cc'));
  expect((await claims.claim('agent-g', ['D1_a', 'D1_b'], 'claim-g', 'D1')).states).toEqual(states('cc'));
  expect(await redis.exists(`${tag}pending`)).toBe(1); // Z1's B1_t5 only
  expect(await redis.zscore(`${tag}pending`, 'D1_a')).toBe(null);
  await claims.release('agent-g', ['D1_a', 'D1_b'], 'claim-g', 'D1');
  expect(await redis.hexists(`${tag}gpending`, 'D1')).toBe(0);
  expect(await redis.zscore(`${tag}claims`, 'claim-g')).toBe(null);
  expect((await claims.claim('agent-g', ['D1_a', 'D1_b'], undefined, 'D1')).states).toEqual(states('cc'));
  // Part of a group produced: those are done, the rest stays pending under the claim until released.
  const e1 = await claims.claim('agent-g', ['E1_a', 'E1_b'], undefined, 'E1');
  await claims.finalise('agent-g', ['E1_a'], e1.id, 'E1');
  expect((await claims.claim('agent-g', ['E1_a', 'E1_b'], undefined, 'E1')).states).toEqual(states('dp'));
  expect(await redis.zscore(`${tag}claims`, e1.id)).not.toBe(null);
  await claims.release('agent-g', ['E1_b'], e1.id, 'E1');
  expect(await redis.zscore(`${tag}claims`, e1.id)).toBe(null);
  expect((await claims.claim('agent-g', ['E1_a', 'E1_b'], undefined, 'E1')).states).toEqual(states('dc'));
  // A key claimed per key first (no batch key) sends a later batch of its prefix down the per-key path.
  await claims.claim('agent-g', ['P1_a']);
  expect((await claims.claim('agent-g', ['P1_a', 'P1_b'], undefined, 'P1')).states).toEqual(states('pc'));
  expect(await redis.hexists(`${tag}gpending`, 'P1')).toBe(0);
  // Keys not of the group's form, and a batch key that cannot name a group, are per key.
  const mixed = await claims.claim('agent-g', ['Q1_a', 'Q1-b', 'R_x'], undefined, 'Q1');
  expect(mixed.states).toEqual(states('ccc'));
  expect(await redis.hget(`${tag}gpending`, 'Q1')).toMatch(/^\d+\na\n$/);
  expect((await claims.claim('agent-g', ['Q_1_a'], undefined, 'Q_1')).states).toEqual(states('c'));
  expect(await redis.hexists(`${tag}gpending`, 'Q_1')).toBe(0);
  // Next bucket: the previous bucket's groups still count; two buckets on, the first group write of the new
  // bucket unlinks the hash from two buckets back.
  nowMs += W * 1000;
  const n1 = await claims.claim('agent-g', ['B1_t1', 'N1_a'], undefined, 'N1');
  expect(n1.states).toEqual(states('dc'));
  await claims.finalise('agent-g', ['N1_a'], n1.id, 'N1');
  expect(await redis.call('EXPIRETIME', `${tag}g${b0 + 1}`)).toBe((b0 + 4) * W);
  nowMs += W * 1000;
  const n2 = await claims.claim('agent-g', ['N1_a', 'N2_a'], undefined, 'N2');
  expect(n2.states).toEqual(states('dc'));
  await claims.finalise('agent-g', ['N2_a'], n2.id, 'N2');
  expect(await redis.exists(`${tag}g${b0}`)).toBe(0);
  expect((await claims.claim('agent-g', ['B1_t1'], undefined, 'B1')).states).toEqual(states('c'));
}

/** A group pending longer than the bound counts as unclaimed and is pruned; the crashed claim's release leaves the new one. */
async function staleGroup(redis: RedisClient, prefix: string): Promise<void> {
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, pendingStaleMs: 300 });
  const tag = `${prefix}http:idem:{agent-q}:`;
  const crashed = await claims.claim('agent-q', ['S1_a', 'S1_b'], undefined, 'S1');
  expect((await claims.claim('agent-q', ['S1_a'], undefined, 'S1')).states).toEqual(states('p'));
  await new Promise((r) => setTimeout(r, 450));
  const retry = await claims.claim('agent-q', ['S1_a', 'S1_b'], undefined, 'S1');
  expect(retry.states).toEqual(states('cc'));
  await claims.release('agent-q', ['S1_a', 'S1_b'], crashed.id, 'S1');
  expect((await claims.claim('agent-q', ['S1_a', 'S1_b'], undefined, 'S1')).states).toEqual(states('pp'));
  await claims.finalise('agent-q', ['S1_a', 'S1_b'], retry.id, 'S1');
  expect((await claims.claim('agent-q', ['S1_a', 'S1_b'], undefined, 'S1')).states).toEqual(states('dd'));
  // A crashed claim's entry is pruned by a later claim once stale (the index says which).
  await claims.claim('agent-q', ['S2_a'], undefined, 'S2');
  await new Promise((r) => setTimeout(r, 450));
  await claims.claim('agent-q', ['S3_a'], undefined, 'S3');
  expect(await redis.hexists(`${tag}gpending`, 'S2')).toBe(0);
  expect(await redis.zscore(`${tag}gindex`, 'S2')).toBe(null);
}

/** groups: false (a rolling upgrade, D48): every key per key; a group another replica wrote is still read. */
async function groupsOff(redis: RedisClient, prefix: string): Promise<void> {
  const on = redisIdempotencyClaims(redis, { prefix, windowSeconds: W });
  const off = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, groups: false });
  const tag = `${prefix}http:idem:{agent-o}:`;
  const a = await off.claim('agent-o', ['O1_a', 'O1_b'], undefined, 'O1');
  expect(a.states).toEqual(states('cc'));
  expect(await redis.hexists(`${tag}gpending`, 'O1')).toBe(0);
  expect(await redis.zscore(`${tag}pending`, 'O1_a')).not.toBe(null);
  // A groups-on replica sees them pending and takes the per-key path for O1 (its prefix is in the prefix set).
  expect((await on.claim('agent-o', ['O1_a', 'O1_c'], undefined, 'O1')).states).toEqual(states('pc'));
  const g = await on.claim('agent-o', ['G1_a'], undefined, 'G1');
  expect(await redis.hexists(`${tag}gpending`, 'G1')).toBe(1);
  expect((await off.claim('agent-o', ['G1_a', 'G1_b'], undefined, 'G1')).states).toEqual(states('pc'));
  await on.finalise('agent-o', ['G1_a'], g.id, 'G1');
  expect((await off.claim('agent-o', ['G1_a'], undefined, 'G1')).states).toEqual(states('d'));
}

/**
 * D51 (a single Redis): a finalise waits (up to finaliseRideMs) to ride with its agent's next claim, first in that
 * claim's pipeline; another agent's claim does not take it; one no claim takes goes alone when the ride is over;
 * close() sends the rest.
 */
async function riding(redis: RedisClient, prefix: string): Promise<void> {
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, finaliseRideMs: 60_000 });
  const tag = `${prefix}http:idem:{agent-v}:`;
  const a = await claims.claim('agent-v', ['V1_a', 'V1_b'], undefined, 'V1');
  const b = await claims.claim('agent-v', ['V2_a'], undefined, 'V2');
  let finalised = 0;
  const fins = [claims.finalise('agent-v', ['V1_a', 'V1_b'], a.id, 'V1'), claims.finalise('agent-v', ['V2_a'], b.id, 'V2')].map((p) => p.then(() => finalised++));
  await new Promise((r) => setTimeout(r, 50));
  expect(finalised).toBe(0);
  expect(await redis.hexists(`${tag}gpending`, 'V1')).toBe(1);
  await claims.claim('agent-w', ['W1_a'], undefined, 'W1');
  await new Promise((r) => setTimeout(r, 20));
  expect(finalised).toBe(0);
  // The agent's next claim carries both finalises ahead of it: the retry of V1 already finds its events done.
  expect((await claims.claim('agent-v', ['V1_a', 'V1_b', 'V2_a', 'V3_a'], undefined, 'V1')).states).toEqual(states('dddc'));
  await Promise.all(fins);
  expect(finalised).toBe(2);
  expect(await redis.hexists(`${tag}gpending`, 'V1')).toBe(0);
  // No claim comes: the finalise goes alone after the ride (30 ms here).
  const short = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, finaliseRideMs: 30 });
  const u = await short.claim('agent-u', ['U1_a'], undefined, 'U1');
  const t0 = Date.now();
  await short.finalise('agent-u', ['U1_a'], u.id, 'U1');
  expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
  expect((await short.claim('agent-u', ['U1_a'], undefined, 'U1')).states).toEqual(states('d'));
  // close() sends what still waits.
  const x = await claims.claim('agent-x', ['X1_a'], undefined, 'X1');
  const finX = claims.finalise('agent-x', ['X1_a'], x.id, 'X1');
  await claims.close!();
  await finX;
  expect((await short.claim('agent-x', ['X1_a'], undefined, 'X1')).states).toEqual(states('d'));
}

/**
 * D53 (a single Redis): the claims made in one event-loop turn go out at its end as one pipeline, in call order, each
 * after its agent's waiting finalises; each answers as if sent alone.
 */
async function coalescing(redis: RedisClient, prefix: string): Promise<void> {
  const claims = redisIdempotencyClaims(redis, { prefix, windowSeconds: W, finaliseRideMs: 60_000, coalesceClaims: true });
  const a = await claims.claim('agent-k', ['K1_a', 'K1_b'], undefined, 'K1');
  const fin = claims.finalise('agent-k', ['K1_a', 'K1_b'], a.id, 'K1');
  // The connection's socket writes, counted (observed, not replaced: the commands still reach Redis).
  const stream = (redis as unknown as { stream: { write: (...x: unknown[]) => boolean } }).stream;
  const write = stream.write;
  let writes = 0;
  stream.write = function (this: unknown, ...x: unknown[]) {
    writes++;
    return write.apply(this, x);
  };
  try {
    const turn = [
      claims.claim('agent-k', ['K1_a', 'K1_b'], undefined, 'K1'),
      claims.claim('agent-k', ['K2_a'], undefined, 'K2'),
      claims.claim('agent-l', ['L1_a', 'K2_a'], undefined, 'L1'),
      claims.claim('agent-k', ['K2_a', 'K3_a']),
    ];
    const [retry, k2, l1, k3] = await Promise.all(turn);
    await fin;
    expect(writes).toBe(1);
    // K1's finalise went first: its retry is a duplicate. K2_a, claimed by the second claim, is pending for the
    // fourth (call order); agent-l's keys are its own.
    expect(retry.states).toEqual(states('dd'));
    expect(k2.states).toEqual(states('c'));
    expect(l1.states).toEqual(states('cc'));
    expect(k3.states).toEqual(states('pc'));
    // One claim in a turn goes alone, as a command.
    writes = 0;
    expect((await claims.claim('agent-k', ['K4_a'], undefined, 'K4')).states).toEqual(states('c'));
    expect(writes).toBe(1);
  } finally {
    stream.write = write;
  }
  // close() sends a turn's claims with the waiting finalises.
  const x = await claims.claim('agent-m', ['M1_a'], undefined, 'M1');
  const finM = claims.finalise('agent-m', ['M1_a'], x.id, 'M1');
  const late = claims.claim('agent-n', ['N9_a'], undefined, 'N9');
  await claims.close!();
  await finM;
  expect((await late).states).toEqual(states('c'));
  expect((await claims.claim('agent-m', ['M1_a'], undefined, 'M1')).states).toEqual(states('d'));
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
      await stalePending(r, single);
      await reRun(r, single);
      await skewedReplicas(r, single);
      await grouped(r, single);
      await staleGroup(r, single);
      await groupsOff(r, single);
      await riding(r, single);
      await coalescing(r, single);
    } finally {
      r.disconnect();
    }
  });

  it('a finalise riding with a claim that cannot be sent fails with it (the ingress retries the finalise, D51)', async () => {
    const r = createRedis(services().redisUrl, { enableAutoPipelining: false, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    if (r.status !== 'ready') await new Promise((res) => r.once('ready', res));
    const claims = redisIdempotencyClaims(r, { prefix: single, windowSeconds: W, finaliseRideMs: 60_000 });
    const k = await claims.claim('agent-f', ['F1_a'], undefined, 'F1');
    const fin = claims.finalise('agent-f', ['F1_a'], k.id, 'F1');
    r.disconnect();
    await expect(claims.claim('agent-f', ['F2_a'], undefined, 'F2')).rejects.toThrow();
    await expect(fin).rejects.toThrow();
    // Nothing was finalised: the key is still pending under the first claim.
    const direct = redisClient();
    try {
      expect(await direct.hexists(`${single}http:idem:{agent-f}:gpending`, 'F1')).toBe(1);
    } finally {
      direct.disconnect();
    }
  });

  it('on a Redis Cluster (an agent\'s buckets share its hash tag)', async () => {
    const c = await clusterClient();
    try {
      await exercise(c, cluster);
      await stalePending(c, cluster);
      await reRun(c, cluster);
      await skewedReplicas(c, cluster);
      await grouped(c, cluster);
      await staleGroup(c, cluster);
      await groupsOff(c, cluster);
      // No riding on a Cluster (D51): a Cluster pipeline goes to one node and follows no redirect.
      const claims = redisIdempotencyClaims(c, { prefix: cluster, windowSeconds: W, finaliseRideMs: 60_000, coalesceClaims: true });
      // Nor coalesced claims (D53): each is its own command to its agent's slot (on the ingress's kind of connection:
      // no auto-pipelining, which would pipeline the two to one node).
      const plain = await clusterClient({ autoPipelining: false });
      try {
        const apart = redisIdempotencyClaims(plain, { prefix: cluster, windowSeconds: W, finaliseRideMs: 60_000, coalesceClaims: true });
        const both = await Promise.all([apart.claim('agent-v', ['C1_a'], undefined, 'C1'), apart.claim('agent-y', ['C1_a'], undefined, 'C1')]);
        expect(both.map((x) => x.states)).toEqual([states('c'), states('c')]);
      } finally {
        plain.disconnect();
      }
      const v = await claims.claim('agent-v', ['V1_a'], undefined, 'V1');
      await claims.finalise('agent-v', ['V1_a'], v.id, 'V1');
      expect(await c.hexists(`${cluster}http:idem:{agent-v}:gpending`, 'V1')).toBe(0);
      expect((await claims.claim('agent-v', ['V1_a'], undefined, 'V1')).states).toEqual(states('d'));
    } finally {
      c.disconnect();
    }
  });
});
