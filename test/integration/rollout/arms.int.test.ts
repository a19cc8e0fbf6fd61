// Rollout arms on real Redis: two Steward instances (each its own Redis connection, monitor and engine) put
// every agent in the same arm and on the same version, and a restarted instance (new connection, monitor and
// engine) agrees with what it decided before; a raise only moves agents from stable to canary, everywhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RolloutMonitor } from '../../../src/adapters/redis/rollout-monitor.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { MemoryStateStore } from '../../../src/engine/state/memory-state-store.js';
import { MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix } from '../setup/helpers.js';
import { ROLL_V1, ROLL_V2, rollRegistry, rollSet, toolCall } from '../../unit/engine/rollout/fixtures.js';

const agents = Array.from({ length: 300 }, (_, i) => `arm-agent-${i}`);

/** One Steward instance: its own Redis connection, rollout monitor and engine over the same blueprints. */
async function instance(prefix: string) {
  const redis = new Redis(services().redisUrl);
  const monitor = new RolloutMonitor(redis, { prefix, windowMs: 60_000, minSamples: 5, refreshMs: 60_000, triggersFor: () => [] });
  await monitor.start();
  const set = rollSet(ROLL_V1, ROLL_V2);
  const engine = new StewardEngine({ blueprints: () => set, registry: rollRegistry(agents), config: defaultEngineConfig(), state: new MemoryStateStore(), trustDebt: new MemoryTrustDebtStore(), engineVersion: 't', rollouts: () => monitor.table() });
  const arms = async () => {
    const out = new Map<string, string>();
    for (const a of agents) {
      const d = await engine.decide(toolCall(a, `t-${a}`, 1) as never, Date.now());
      out.set(a, `${d.rolloutArm}:${d.blueprintVersion}`);
    }
    return out;
  };
  return { monitor, arms, async close() { await monitor.stop(); redis.disconnect(); } };
}

describe('rollout arms across instances and restarts (real Redis)', () => {
  const prefix = uniqueRedisPrefix('arms');
  const redis = new Redis(services().redisUrl);
  const store = new RedisRolloutStore(redis, prefix);
  beforeAll(async () => {
    await store.set('t/roll', { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 20 }, Date.now(), 'test');
  });
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
  });

  it('two instances agree on every agent, a restart changes nothing, and a raise only adds canary agents', async () => {
    const a = await instance(prefix);
    const b = await instance(prefix);
    const armsA = await a.arms();
    const armsB = await b.arms();
    expect(armsB).toEqual(armsA);
    const canary = [...armsA].filter(([, v]) => v === 'canary:2.0.0').map(([k]) => k);
    expect([...armsA.values()].every((v) => v === 'canary:2.0.0' || v === 'stable:1.0.0')).toBe(true);
    expect(canary.length).toBeGreaterThan(30);
    expect(canary.length).toBeLessThan(90);
    await a.close();
    // Restart: a new connection, monitor and engine read the same shared state.
    const a2 = await instance(prefix);
    expect(await a2.arms()).toEqual(armsA);
    // Raise to 50 % (what `steward rollout set` does); both instances pick it up at their next refresh.
    await store.set('t/roll', { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 50 }, Date.now(), 'raise');
    await a2.monitor.refresh();
    await b.monitor.refresh();
    const raisedA = await a2.arms();
    expect(await b.arms()).toEqual(raisedA);
    for (const c of canary) expect(raisedA.get(c)).toBe('canary:2.0.0');
    expect([...raisedA.values()].filter((v) => v === 'canary:2.0.0').length).toBeGreaterThan(canary.length);
    await a2.close();
    await b.close();
  });
});
