// The tripwire stage's ingest marks (docs/spec-decisions.md D52) on real Redis, single server and Cluster: the first
// record of an agent's key is decided, a later copy in its partition is not, the first record redelivered (same
// offset: the stage is at-least-once) is decided again, a mark from another partition or one that expired is taken
// over, and keys are the agent's own.
import { afterAll, describe, expect, it } from 'vitest';
import { RedisIngestMarks, type IngestRecord } from '../../../src/adapters/redis/ingest-marks.js';
import type { RedisClient } from '../../../src/adapters/redis/client.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';
import { clusterClient, deleteClusterPrefix } from '../redis-cluster/cluster.js';

const rec = (key: string, offset: number | string, o: Partial<IngestRecord> = {}): IngestRecord => ({ agentId: 'a1', key, topic: 'p.traces', partition: 0, offset: String(offset), ...o });

function cases(name: string, connect: () => Promise<RedisClient>, cleanup: (c: RedisClient, prefix: string) => Promise<unknown>) {
  describe(`ingest marks (${name})`, () => {
    const prefix = uniqueRedisPrefix('ingest-marks');
    let client: RedisClient | undefined;
    const marks = async (ttlSeconds = 60) => new RedisIngestMarks((client ??= await connect()), { prefix, ttlSeconds });
    afterAll(async () => {
      if (!client) return;
      await cleanup(client, prefix);
      client.disconnect();
    });

    it('first, later copy, redelivery of the first, copies inside one round, other agents', async () => {
      const m = await marks();
      expect(await m.firsts([rec('k1', 10), rec('k2', 11), rec('k1', 12), rec('k1', 13, { agentId: 'a2' })])).toEqual([true, true, false, true]);
      // The next round: copies of k1 and k2 further down the partition are dropped; a new key is first.
      expect(await m.firsts([rec('k2', 20), rec('k1', 21), rec('k3', 22)])).toEqual([false, false, true]);
      // The chunk redelivered after a crash (same offsets): its first records are decided again, its copies not.
      expect(await m.firsts([rec('k1', 10), rec('k2', 11), rec('k1', 12)])).toEqual([true, true, false]);
      // Offsets compare as numbers, not text: 9 is before 10 (a copy at 9 would be the first; here it is not a copy).
      expect(await m.firsts([rec('k9', 9)])).toEqual([true]);
      expect(await m.firsts([rec('k9', 10)])).toEqual([false]);
      expect(await m.firsts([rec('k9', '100000000000000000001')])).toEqual([false]);
      // Keys are text, not patterns or separators: ':' and '*' inside agent or key do not meet other keys.
      expect(await m.firsts([rec('x:y', 30), rec('x', 31, { agentId: 'a1:y' }), rec('*', 32)])).toEqual([true, true, true]);
    });

    it('a mark on another partition proves nothing and is taken over; one two buckets old is gone', async () => {
      const m = await marks();
      expect(await m.firsts([rec('p1', 50, { partition: 3 })])).toEqual([true]);
      // The topic was re-partitioned: the key's records now land on partition 0.
      expect(await m.firsts([rec('p1', 5)])).toEqual([true]);
      expect(await m.firsts([rec('p1', 6)])).toEqual([false]);
      // Buckets of the window (60 s here): a mark is read in its bucket and the next, then forgotten.
      let now = 1_000 * 60_000;
      const clocked = new RedisIngestMarks((client ??= await connect()), { prefix, ttlSeconds: 60, nowMs: () => now });
      expect(await clocked.firsts([rec('e1', 70)])).toEqual([true]);
      now += 60_000;
      expect(await clocked.firsts([rec('e1', 71)])).toEqual([false]);
      now += 60_000;
      expect(await clocked.firsts([rec('e1', 72)])).toEqual([true]);
      // And the hash itself expires (three windows after its last write), unlinked earlier by a write two buckets on.
      const ttl = await client.ttl(`${prefix}ingest:{a1}:${now / 60_000}`);
      expect(ttl).toBeGreaterThan(120);
      expect(ttl).toBeLessThanOrEqual(180);
      now += 120_000;
      expect(await clocked.firsts([rec('e2', 80)])).toEqual([true]);
      expect(await client.exists(`${prefix}ingest:{a1}:${(now - 120_000) / 60_000}`)).toBe(0);
    });
  });
}

cases('single server', async () => redisClient(), (c, p) => deleteRedisPrefix(c as ReturnType<typeof redisClient>, p));
cases('Cluster', clusterClient, deleteClusterPrefix);
