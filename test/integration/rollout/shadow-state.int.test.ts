// Shadow evaluation must not touch real state (docs/rollout.md): on real Redis, the peek view counts a rate
// window as the live script would with this hit added, and writes nothing — a candidate's rate rule leaves no
// window behind, while the same rule in the live engine does.
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisStateStore } from '../../../src/adapters/redis/state-store.js';
import { PeekStateStore } from '../../../src/adapters/redis/rollout-peek-state.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { readOnlyTrustDebt, ShadowEvaluator } from '../../../src/engine/rollout/shadow.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix } from '../setup/helpers.js';
import { ROLL_V1, rollRegistry, rollSet, toolCall } from '../../unit/engine/rollout/fixtures.js';

const RATED = `
id: t/rated@1.0.0
version: "1.0.0"
description: rate-limited candidate
tripwires:
  - id: burst
    eval_tier: 1
    when: { hook: tool_call }
    condition: 'NOT exceeds_rate("calls", 2, "1m")'
    on_fail: { decision: block, reason: too many calls }
checks:
  - id: small
    when: { hook: tool_call }
    rule: { condition: "args.n <= 50", on_fail: { decision: block, reason: over fifty } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;

describe('shadow state is read-only (real Redis)', () => {
  const prefix = uniqueRedisPrefix('peek');
  const redis = new Redis(services().redisUrl);
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
  });

  it('peek counts like the live window with the hit added and writes nothing', async () => {
    const live = new RedisStateStore(redis, prefix);
    const peek = new PeekStateStore(redis, live);
    const now = 1_767_225_600_000;
    for (const id of ['h1', 'h2', 'h3']) await live.hit('ten:a', 'k', 60_000, now, id);
    const key = live.rateKey('ten:a', 'k');
    expect(await peek.hit('ten:a', 'k', 60_000, now, 'h4')).toBe(4);
    expect(await peek.hit('ten:a', 'k', 60_000, now, 'h2')).toBe(3);
    expect(await redis.zcard(key)).toBe(3);
    expect(await peek.hit('ten:a', 'other', 60_000, now, 'h1')).toBe(1);
    expect(await redis.exists(live.rateKey('ten:a', 'other'))).toBe(0);
  });

  it("a candidate's rate rule evaluated in shadow leaves no window; the same rule live does", async () => {
    const live = new RedisStateStore(redis, prefix);
    const registry = rollRegistry(['a']);
    const debt = new MemoryTrustDebtStore();
    const active = new StewardEngine({ blueprints: () => rollSet(ROLL_V1), registry, config: defaultEngineConfig(), state: live, trustDebt: debt, engineVersion: 't' });
    const candidateSet = rollSet(RATED);
    const shadow = new ShadowEvaluator({
      shadowId: 's',
      engine: new StewardEngine({ blueprints: () => candidateSet, registry, config: defaultEngineConfig(), state: new PeekStateStore(redis, live), trustDebt: readOnlyTrustDebt(debt), engineVersion: 't' }),
      nowMs: () => 0,
    });
    const now = 1_767_225_600_000;
    const diffs = [];
    for (let i = 0; i < 4; i++) {
      const t = toolCall('a', `rt-${i}`, 1) as never;
      diffs.push(await shadow.evaluate(t, await active.decide(t, now + i), now + i));
    }
    // Each shadow decision sees an empty window plus its own hit: never over the limit, nothing written.
    expect(diffs.map((d) => d?.shadow_intervention)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(await redis.keys(`${prefix}rate:*calls`)).toEqual([]);
    // The same rule live records every hit and blocks the third call.
    const liveRated = new StewardEngine({ blueprints: () => candidateSet, registry, config: defaultEngineConfig(), state: live, trustDebt: debt, engineVersion: 't' });
    const got = [];
    for (let i = 0; i < 3; i++) got.push((await liveRated.decide(toolCall('a', `lv-${i}`, 1) as never, now + i)).intervention);
    expect(got).toEqual(['ok', 'ok', 'block']);
    expect(await redis.keys(`${prefix}rate:*calls`)).toHaveLength(1);
  });
});
