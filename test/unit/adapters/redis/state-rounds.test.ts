// A reply that is not one answer per operation (a byte stream out of order hands a command another command's reply:
// seen through a fault proxy that reordered chunks) fails the call retryably instead of answering undefined.
import { describe, expect, it } from 'vitest';
import { RedisStateRounds } from '../../../../src/adapters/redis/state-rounds.js';
import type { RedisClient } from '../../../../src/adapters/redis/client.js';
import { StewardError } from '../../../../src/errors.js';

function clientAnswering(reply: unknown): RedisClient {
  return { defineCommand() {}, stewardStateRound: () => Promise.resolve(reply) } as unknown as RedisClient;
}

describe('RedisStateRounds reply check', () => {
  it('answers each operation from a reply of one answer per operation', async () => {
    const r = new RedisStateRounds(clientAnswering([3, ['1', null, null, null, null, null]]));
    const got = await Promise.all([r.run({ kind: 'h', key: 'a', now: 1, win: 1, hitId: 'x', keep: 1 }), r.run({ kind: 'r', key: 'b' })]);
    expect(got).toEqual([3, ['1', null, null, null, null, null]]);
  });

  it.each([[[]], ['OK'], [[1, 2, 3]]])('fails every operation of the call retryably when the reply is %j', async (reply) => {
    const r = new RedisStateRounds(clientAnswering(reply));
    const out = await Promise.allSettled([r.run({ kind: 'r', key: 'a' }), r.run({ kind: 'r', key: 'b' })]);
    for (const o of out) {
      expect(o.status).toBe('rejected');
      const e = (o as PromiseRejectedResult).reason as StewardError;
      expect(e.code).toBe('STEWARD_STATE_UNAVAILABLE');
      expect(e.retryable).toBe(true);
    }
  });
});
