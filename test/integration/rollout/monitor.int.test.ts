// Rollback triggers with several instances on real Redis: two monitors each see part of the traffic (neither
// alone has the minimum samples); their shared counters make the trigger fire, and exactly one of them wins
// the rollback (one event), while both end with the canary at 0 %.
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RolloutMonitor } from '../../../src/adapters/redis/rollout-monitor.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { compileTrigger, type CompiledTrigger } from '../../../src/engine/rollout/triggers.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix } from '../setup/helpers.js';

const trigger = compileTrigger('halt_rate_delta > 20%') as CompiledTrigger;
const halt = { n: 1, intervention: 1, halt: 1, block: 1, error: 0 };
const ok = { n: 1, intervention: 0, halt: 0, block: 0, error: 0 };

describe('rollback monitor across two instances (real Redis)', () => {
  const prefix = uniqueRedisPrefix('mon');
  const redis = new Redis(services().redisUrl);
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
  });

  it('shared counters fire the trigger once; exactly one instance reports the rollback', async () => {
    const store = new RedisRolloutStore(redis, prefix);
    await store.set('t/roll', { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 10 }, 1, 'test');
    const rollbacks: string[] = [];
    const conns = [new Redis(services().redisUrl), new Redis(services().redisUrl)];
    const monitors = conns.map(
      (c, i) => new RolloutMonitor(c, { prefix, windowMs: 60_000, minSamples: 10, refreshMs: 60_000, flushMs: 60_000, triggersFor: () => [trigger], onRollback: (r) => void rollbacks.push(`m${i}:${r.firing.trigger.source}`), nowMs: () => 5 }),
    );
    try {
      for (const m of monitors) await m.start();
      const at = 1_767_225_600_000;
      // Six canary halts and six stable oks per instance: below min_samples (10) alone, above together.
      for (const m of monitors) for (let k = 0; k < 6; k++) {
        m.record('t/roll', 'canary', at, halt);
        m.record('t/roll', 'stable', at, ok);
      }
      await monitors[0]!.flush();
      expect((await store.get('t/roll'))?.percent).toBe(10);
      await monitors[1]!.flush();
      expect(await store.get('t/roll')).toMatchObject({ percent: 0, reason: 'rollback: halt_rate_delta > 20%' });
      expect(rollbacks).toEqual(['m1:halt_rate_delta > 20%']);
      // More traffic on the other instance after its refresh: the old generation's rollback is void, nothing more fires.
      await monitors[0]!.refresh();
      for (let k = 0; k < 20; k++) monitors[0]!.record('t/roll', 'canary', at, halt);
      await monitors[0]!.flush();
      expect(rollbacks).toHaveLength(1);
      expect((await store.rollback('t/roll', 1, 9, 'stale')).won).toBe(false);
    } finally {
      for (const m of monitors) await m.stop();
      for (const c of conns) c.disconnect();
    }
  });

  it('a rollback CAS lost to an operator change leaves the operator\'s rollout in the local table, not 0 % over the old versions', async () => {
    const store = new RedisRolloutStore(redis, prefix);
    await store.set('t/op', { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 10 }, 1, 'test');
    const rollbacks: number[] = [];
    const conn = new Redis(services().redisUrl);
    const m = new RolloutMonitor(conn, { prefix, windowMs: 60_000, minSamples: 5, refreshMs: 60_000, flushMs: 60_000, triggersFor: () => [trigger], onRollback: (r) => void rollbacks.push(r.generation), nowMs: () => 7 });
    try {
      await m.start();
      const at = 1_767_225_600_000;
      for (let k = 0; k < 6; k++) {
        m.record('t/op', 'canary', at, halt);
        m.record('t/op', 'stable', at, ok);
      }
      // The operator ships a new canary at 20 % before this instance's flush: its trigger fires on the old
      // generation and its compare-and-set loses.
      const op = await store.set('t/op', { stableVersion: '1.0.0', canaryVersion: '3.0.0', percent: 20 }, 2, 'operator');
      await m.flush();
      expect(rollbacks).toEqual([]);
      expect(await store.get('t/op')).toMatchObject({ canaryVersion: '3.0.0', percent: 20 });
      expect(m.table().get('t/op')).toMatchObject({ stableVersion: '1.0.0', canaryVersion: '3.0.0', percent: 20, generation: op.generation, reason: 'operator' });
    } finally {
      await m.stop();
      conn.disconnect();
    }
  });

  it('a declared rollout starts once, never over an existing one', async () => {
    const store = new RedisRolloutStore(redis, prefix);
    const v = { stableVersion: '1.0.0', canaryVersion: '3.0.0', percent: 5 };
    const [a, b] = await Promise.all([store.initIfAbsent('t/declared', v, 1, 'declared'), store.initIfAbsent('t/declared', v, 1, 'declared')]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    await store.rollback('t/declared', (a ?? b)!.generation, 2, 'rolled back');
    expect(await store.initIfAbsent('t/declared', v, 3, 'declared again')).toBeUndefined();
    expect(await store.get('t/declared')).toMatchObject({ percent: 0, reason: 'rolled back' });
  });
});
