/**
 * The durable approval state on real Redis (docs/approvals.md "Durability and exactly once"): one transition out
 * of pending however many resolvers race, deadlines claimed under a lease, and outcomes whose publisher died
 * handed out again once their lease ran out. Time is passed in, so nothing here waits on a clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisApprovalStore } from '../../../src/adapters/redis/approval-store.js';
import { answeredOutcome, timeoutOutcome } from '../../../src/engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../../src/engine/approvals/policy.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const req = (id: string, deadline: number): ApprovalRequest => ({
  approval_id: id, tool: 'process_refund', agent_id: 'a1', tenant: 'acme', agent_tier: 'ACL-2', trace_id: `t-${id}`, event_id: `e-${id}`,
  job_id: null, skill_id: null, role: 'supervisor', default_action: 'deny', requested_ms: deadline - 1000, deadline_ms: deadline, args: { amount: 900 },
});

describe('RedisApprovalStore (real Redis)', () => {
  const redis = redisClient();
  const prefix = uniqueRedisPrefix('ap-store');
  let store: RedisApprovalStore;
  beforeAll(() => {
    store = new RedisApprovalStore(redis, { prefix, leaseMs: 10_000 });
  });
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
  });

  it('stores a request once; one of many racing resolvers wins, the rest see its outcome', async () => {
    const r = req('ap-race', 5_000);
    expect(await store.create(r, 0)).toBe(true);
    expect(await store.create(r, 0)).toBe(false);
    const racers = Array.from({ length: 24 }, (_, i) => (i % 2 ? timeoutOutcome(r, 6_000 + i) : answeredOutcome(r, { decision: 'approve', approver: `ap${i}` }, 'kafka', 6_000 + i)));
    const results = await Promise.all(racers.map((o) => store.resolve(o, 6_000)));
    const won = results.filter((x) => x.kind === 'won');
    expect(won).toHaveLength(1);
    const winner = won[0]!.kind === 'won' ? won[0]!.outcome : undefined;
    for (const x of results) expect(x.kind === 'unknown' ? undefined : x.outcome).toEqual(winner);
    expect((await store.status('ap-race'))?.status).toBe(winner!.status);
    expect(await store.resolve(timeoutOutcome(req('ap-nothing', 1), 2), 2)).toEqual({ kind: 'unknown' });
    // the winner's outcome waits in the outbox until its publication is confirmed
    expect((await store.claim(6_000 + 10_001)).unpublished.map((o) => o.approval_id)).toEqual(['ap-race']);
    await store.published('ap-race');
  });

  it('claims due deadlines under a lease, and hands out an unpublished outcome again after its lease', async () => {
    const a = req('ap-due', 100_000);
    const b = req('ap-later', 200_000);
    await store.create(a, 0);
    await store.create(b, 0);
    expect((await store.claim(99_999)).due).toEqual([]);
    const first = await store.claim(100_000);
    expect(first.due.map((r) => r.approval_id)).toEqual(['ap-due']);
    // a second sweeper within the lease gets nothing; after it, the same request again (its claimer died)
    expect((await store.claim(105_000)).due).toEqual([]);
    expect((await store.claim(110_001)).due.map((r) => r.approval_id)).toEqual(['ap-due']);
    // resolved (timeout) but never confirmed published: re-offered once the outbox lease ran out
    const res = await store.resolve(timeoutOutcome(a, 110_002), 110_002);
    expect(res.kind).toBe('won');
    expect((await store.claim(115_000)).unpublished).toEqual([]);
    const again = await store.claim(120_003);
    expect(again.unpublished.map((o) => [o.approval_id, o.status])).toEqual([['ap-due', 'timed_out']]);
    await store.published('ap-due');
    expect(await store.claim(1_000_000)).toMatchObject({ unpublished: [], due: [expect.objectContaining({ approval_id: 'ap-later' })] });
    // an answer after the timeout changes nothing
    expect((await store.resolve(answeredOutcome(a, { decision: 'approve', approver: 'alice' }, 'http', 130_000), 130_000)).kind).toBe('decided');
  });
});
