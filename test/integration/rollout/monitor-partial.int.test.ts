// The rollback monitor when one counter key of a flush fails and the others apply (a cluster master down, a key of
// the wrong type): the failed key's counts are sent again at the next flush, the applied ones are not. Merging the
// whole flush back counted the healthy keys again at every flush (5, 10, 15 for 5 decisions), so a trigger's
// minimum sample was met with a handful of real decisions.
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RolloutMonitor } from '../../../src/adapters/redis/rollout-monitor.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { compileTrigger, type CompiledTrigger } from '../../../src/engine/rollout/triggers.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix } from '../setup/helpers.js';

const trigger = compileTrigger('halt_rate_delta > 20%') as CompiledTrigger;
const ok = { n: 1, intervention: 0, halt: 0, block: 0, error: 0 };

describe('rollback monitor: a flush that partly fails', () => {
  it('sends again only the keys that failed; the applied counts are counted once', async () => {
    const redis = new Redis(services().redisUrl);
    const prefix = uniqueRedisPrefix('mon-part');
    const store = new RedisRolloutStore(redis, prefix);
    const at = 1_767_225_600_000;
    const windowStart = Math.floor(at / 60_000) * 60_000;
    const monitor = new RolloutMonitor(redis, { prefix, windowMs: 60_000, minSamples: 1000, refreshMs: 60_000, flushMs: 60_000, triggersFor: () => [trigger], nowMs: () => 5 });
    try {
      for (const n of ['t/good', 't/bad']) await store.set(n, { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 10 }, 1, 'test');
      const good = store.counterKey('t/good', 1, 60_000, windowStart);
      const bad = store.counterKey('t/bad', 1, 60_000, windowStart);
      await redis.set(bad, 'not a hash'); // every HINCRBY on it fails (WRONGTYPE)
      await monitor.start();
      for (let k = 0; k < 5; k++) {
        monitor.record('t/good', 'stable', at, ok);
        monitor.record('t/bad', 'stable', at, ok);
      }
      for (let f = 0; f < 3; f++) await expect(monitor.flush()).rejects.toThrow(/WRONGTYPE|rollout counters/);
      expect((await store.readCounts(good)).stable?.n).toBe(5);
      // Once the bad key is writable, its 5 decisions arrive once as well.
      await redis.del(bad);
      await monitor.flush();
      expect((await store.readCounts(bad)).stable?.n).toBe(5);
      expect((await store.readCounts(good)).stable?.n).toBe(5);
    } finally {
      await monitor.stop();
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
    }
  });
});
