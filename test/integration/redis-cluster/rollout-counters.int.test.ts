// The rollback monitor's shared counters on Redis Cluster: a flush holds one counter key per rollout, generation
// and window, and those keys hash to different slots. They went out as one pipeline, which ioredis Cluster refuses
// when its keys live on different nodes ("All keys in the pipeline should belong to the same slots allocation
// group"): every flush failed, and no rollback trigger ever fired on a cluster. Now one pipeline per key.
import { describe, expect, it } from 'vitest';
import { RolloutMonitor } from '../../../src/adapters/redis/rollout-monitor.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { compileTrigger, type CompiledTrigger } from '../../../src/engine/rollout/triggers.js';
import { masterPortOf, withCluster } from './cluster.js';

const trigger = compileTrigger('halt_rate_delta > 20%') as CompiledTrigger;
const halt = { n: 1, intervention: 1, halt: 1, block: 1, error: 0 };
const ok = { n: 1, intervention: 0, halt: 0, block: 0, error: 0 };

describe('rollback monitor on Redis Cluster', () => {
  it('one flush over rollouts whose counters live on different masters fires each trigger', async () => {
    await withCluster(async (c, prefix) => {
      const store = new RedisRolloutStore(c, prefix);
      const at = 1_767_225_600_000;
      const windowStart = Math.floor(at / 60_000) * 60_000;
      // Two rollouts whose counter keys (generation 1, the 60 s window) are served by different masters.
      const names: string[] = [];
      const ports = new Set<number>();
      for (let i = 0; names.length < 2; i++) {
        const port = await masterPortOf(c, store.counterKey(`t/r${i}`, 1, 60_000, windowStart));
        if (ports.has(port)) continue;
        ports.add(port);
        names.push(`t/r${i}`);
      }
      for (const n of names) await store.set(n, { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 10 }, 1, 'test');
      const rollbacks: string[] = [];
      const monitor = new RolloutMonitor(c, { prefix, windowMs: 60_000, minSamples: 10, refreshMs: 60_000, flushMs: 60_000, triggersFor: () => [trigger], onRollback: (r) => void rollbacks.push(r.state.name), nowMs: () => 5 });
      try {
        await monitor.start();
        for (const n of names)
          for (let k = 0; k < 12; k++) {
            monitor.record(n, 'canary', at, halt);
            monitor.record(n, 'stable', at, ok);
          }
        await monitor.flush();
        expect(rollbacks.sort()).toEqual([...names].sort());
        for (const n of names) expect(await store.get(n)).toMatchObject({ percent: 0, reason: 'rollback: halt_rate_delta > 20%' });
        expect(await store.readCounts(store.counterKey(names[0]!, 1, 60_000, windowStart))).toEqual({ canary: { n: 12, intervention: 12, halt: 12, block: 12, error: 0 }, stable: { n: 12, intervention: 0, halt: 0, block: 0, error: 0 } });
      } finally {
        await monitor.stop();
      }
    });
  });
});
