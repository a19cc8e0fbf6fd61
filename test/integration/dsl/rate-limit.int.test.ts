/**
 * Acceptance (#4): exceeds_rate against real Redis with two concurrent evaluators (two connections,
 * interleaved requests): exactly `limit` traces pass in one window, and a redelivered trace counts once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStateStore } from '../../../src/adapters/redis/state-store.js';
import { compileCondition, compileWhen } from '../../../src/engine/dsl/index.js';
import { runTripwireStage } from '../../../src/engine/tripwires/index.js';
import type { CompiledBlueprint, EvalContext, StateStore } from '../../../src/engine/types.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const LIMIT = 25;

function blueprint(): CompiledBlueprint {
  const { condition, problems } = compileCondition({ NOT: 'exceeds_rate(agent_id, 25, "1m")' }, { lists: {}, internalDomains: [], internalCidrs: [], namedPatterns: {} });
  expect(problems).toEqual([]);
  return {
    id: 'it/rate@1.0', version: '1.0.0', description: '', chain: [], scope: {}, metrics: [], rules: [], lists: {}, resolved: {},
    ctq: { aggregation: 'weighted' }, scoring: { ok: 0.2, nudge: 0.4, escalate: 0.6, block: 0.8 }, trustDebt: undefined as never,
    tripwires: [{ id: 'api_rate_limit', when: compileWhen({}), condition: condition!, evalTier: 1, latencyBudgetMs: 2000, requiresState: true, severity: 'standard', onFail: { decision: 'block', reason: 'Rate limit exceeded' } }],
  };
}

function ctx(traceId: string, agent: string, nowMs: number, state: StateStore): EvalContext {
  return {
    trace: { trace_id: traceId, agent_id: agent, timestamp: new Date(nowMs).toISOString(), hook: 'tool_call', tool: 'api' },
    agent: { id: agent, tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true },
    trustDebt: 0,
    nowMs,
    stateNamespace: `acme:${agent}`,
    state,
  };
}

describe('exceeds_rate on real Redis', () => {
  const a = redisClient();
  const b = redisClient();
  const prefix = uniqueRedisPrefix('dsl-rate');
  const storeA = new RedisStateStore(a, prefix);
  const storeB = new RedisStateStore(b, prefix);
  const bp = blueprint();

  afterAll(async () => {
    await deleteRedisPrefix(a, prefix);
    a.disconnect();
    b.disconnect();
  });

  it('two concurrent evaluators let exactly `limit` traces through', async () => {
    const t0 = 1_700_000_000_000;
    // Rounds of four in-flight evaluations (two per connection) keep the two evaluators interleaved.
    const results = [];
    for (let i = 0; i < 4 * LIMIT; i += 4) {
      const round = [0, 1, 2, 3].map((k) => Promise.resolve(runTripwireStage(bp, ctx(`t-${i + k}`, 'agent-x', t0 + i + k, (i + k) % 2 === 0 ? storeA : storeB))));
      results.push(...(await Promise.all(round)));
    }
    expect(results.every((r) => r.tripwires[0]!.error === undefined)).toBe(true);
    expect(results.filter((r) => r.intervention === 'ok')).toHaveLength(LIMIT);
    expect(results.filter((r) => r.intervention === 'block')).toHaveLength(3 * LIMIT);
    // Each evaluator got a share of the passes: the counter really was shared.
    const passedA = results.filter((r, i) => i % 2 === 0 && r.intervention === 'ok').length;
    expect(passedA).toBeGreaterThan(0);
    expect(LIMIT - passedA).toBeGreaterThan(0);
  });

  it('a redelivered trace (same trace_id) is counted once, from either evaluator', async () => {
    const t0 = 1_700_000_100_000;
    const agent = 'agent-redeliver';
    const firsts = await Promise.all([storeA.hit(`acme:${agent}`, 'k', 60_000, t0, 'trace-1:k'), storeB.hit(`acme:${agent}`, 'k', 60_000, t0, 'trace-1:k')]);
    expect(firsts).toEqual([1, 1]);
    expect(await storeB.hit(`acme:${agent}`, 'k', 60_000, t0 + 1, 'trace-2:k')).toBe(2);
    // The window slides: hits at t0 and t0+1 leave it after 60 s.
    expect(await storeA.hit(`acme:${agent}`, 'k', 60_000, t0 + 60_001, 'trace-3:k')).toBe(1);
    const ttl = await a.pttl(storeA.rateKey(`acme:${agent}`, 'k'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('hits issued in the same tick (one batched script call) count in call order, per key, and fail alone', async () => {
    const t0 = 1_700_000_200_000;
    const ns = 'acme:agent-batch';
    // Same key five times (one a redelivery), another key, and a key holding a string (WRONGTYPE).
    await a.set(storeA.rateKey(ns, 'broken'), 'x');
    const calls = [
      storeA.hit(ns, 'k', 60_000, t0, 'b-1'),
      storeA.hit(ns, 'k', 60_000, t0 + 1, 'b-2'),
      storeA.hit(ns, 'other', 60_000, t0, 'b-1'),
      storeA.hit(ns, 'broken', 60_000, t0, 'b-1'),
      storeA.hit(ns, 'k', 60_000, t0 + 2, 'b-2'),
      storeA.hit(ns, 'k', 60_000, t0 + 3, 'b-3'),
      storeA.hit(ns, 'k', 60_000, t0 + 60_001, 'b-4'),
    ];
    const settled = await Promise.allSettled(calls);
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as { code: string }).code))).toEqual([1, 2, 1, 'STEWARD_STATE_UNAVAILABLE', 2, 3, 2]);
    expect(await a.zcard(storeA.rateKey(ns, 'k'))).toBe(2); // the last hit pruned b-1 (t0) and b-2 (t0 + 1): b-3, b-4 left
    const ttl = await a.pttl(storeA.rateKey(ns, 'other'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('a hit stamped ahead (within the allowed skew) does not prune hits that traces stamped earlier still count', async () => {
    const t0 = 1_700_100_000_000;
    const run = async (store: RedisStateStore, ns: string) => {
      const out: number[] = [];
      for (let i = 0; i < 5; i++) out.push(await store.hit(ns, 'k', 60_000, t0 + i, `e-${i}`));
      out.push(await store.hit(ns, 'k', 60_000, t0 + 300_000, 'ahead')); // stamped 5 min ahead
      for (let i = 5; i < 8; i++) out.push(await store.hit(ns, 'k', 60_000, t0 + i, `e-${i}`));
      return out;
    };
    // The stage's setting (5 min skew): the five earlier hits still count for e-5..e-7 (and the later-stamped one too).
    const skewed = new RedisStateStore(a, prefix, { maxEventTimeSkewMs: 300_000 });
    expect(await run(skewed, 'acme:skewed')).toEqual([1, 2, 3, 4, 5, 1, 7, 8, 9]);
    const ttl = await a.pttl(skewed.rateKey('acme:skewed', 'k'));
    expect(ttl).toBeGreaterThan(60_000); // kept for window + 2 x skew
    expect(ttl).toBeLessThanOrEqual(660_000);
    // Without a skew bound, event times are taken as they come: the stamp ahead pruned them (counts restart).
    expect(await run(storeA, 'acme:trusting')).toEqual([1, 2, 3, 4, 5, 1, 2, 3, 4]);
  });

  it('storage.get reads namespaced JSON state', async () => {
    await storeA.set('acme:trader-1', 'trades_today', 49);
    await a.set(`${prefix}kv:acme:trader-1:mode`, 'paper');
    expect(await storeB.get('acme:trader-1', 'trades_today')).toBe(49);
    expect(await storeB.get('acme:trader-1', 'mode')).toBe('paper');
    expect(await storeB.get('acme:trader-2', 'trades_today')).toBeUndefined();
    const { condition } = compileCondition("storage.get('trades_today') < 50", { lists: {}, internalDomains: [], internalCidrs: [], namedPatterns: {} });
    expect(await condition!.evaluate(ctx('s-1', 'trader-1', 0, storeB))).toBe(true);
    expect(await condition!.evaluate(ctx('s-2', 'trader-2', 0, storeB))).toBe(false);
  });
});
