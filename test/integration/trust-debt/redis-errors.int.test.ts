// Issue #22 item 10: Redis replies no retry cures are not retried for ever. A script failing on a key of the
// wrong type (real Redis) is non-retryable in the trust-debt store and the state store; OOM is classified.
import { afterAll, describe, expect, it } from 'vitest';
import { redisFailureKind } from '../../../src/adapters/redis/client.js';
import { RedisStateStore } from '../../../src/adapters/redis/state-store.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { trustDebtConfigFrom } from '../../../src/engine/trust-debt/index.js';
import { isRetryable } from '../../../src/errors.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const redis = redisClient();
const prefix = uniqueRedisPrefix('redis-errors');
afterAll(async () => {
  await deleteRedisPrefix(redis, prefix);
  redis.disconnect();
});

const failure = async (p: Promise<unknown>): Promise<Error> => {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a failure');
};

describe('Redis errors that repeat on every retry (real Redis)', () => {
  it('the trust-debt script on a corrupt agent key: not retryable, names the cause', async () => {
    const store = new RedisTrustDebtStore(redis, { prefix });
    await redis.set(store.agentKey('t', 'corrupt'), 'not a hash');
    const e = await failure(store.apply({ eventId: 'e1', tenant: 't', agentId: 'corrupt', atMs: Date.UTC(2026, 0, 1), kind: 'intervention', intervention: 'block' }, trustDebtConfigFrom({})));
    expect(e.message).toMatch(/WRONGTYPE/);
    expect(e.message).toMatch(/not retried/);
    expect(isRetryable(e)).toBe(false);
    // a healthy agent in the same store is unaffected
    const ok = await store.apply({ eventId: 'e2', tenant: 't', agentId: 'fine', atMs: Date.UTC(2026, 0, 1), kind: 'intervention', intervention: 'block' }, trustDebtConfigFrom({}));
    expect(ok.after).toBeGreaterThan(0);
  });

  it('the rate-limit state on a key of the wrong type: not retryable', async () => {
    const state = new RedisStateStore(redis, prefix);
    await redis.set(state.rateKey('ns', 'k'), 'not a zset');
    const e = await failure(state.hit('ns', 'k', 60_000, Date.UTC(2026, 0, 1), 'h1'));
    expect(isRetryable(e)).toBe(false);
  });

  it('classification: OOM and script errors are not transient, NOSCRIPT and connection errors are', () => {
    expect(redisFailureKind(new Error("OOM command not allowed when used memory > 'maxmemory'."))).toBe('oom');
    expect(redisFailureKind(new Error('ERR user_script:12: attempt to compare nil with number script: 4f2a…, on @user_script:12.'))).toBe('script');
    expect(redisFailureKind(new Error('NOSCRIPT No matching script. Please use EVAL.'))).toBe('transient');
    expect(redisFailureKind(new Error('connect ECONNREFUSED 127.0.0.1:6379'))).toBe('transient');
  });
});
