/**
 * waitForApproval has no "a minute before now" default any more (review finding 12 of issue #25): an agent that
 * restarts ten minutes after its approval was decided and waits again must read from the decision's time, so the
 * caller names it; without it the call is refused before any Kafka work.
 */
import { describe, expect, it } from 'vitest';
import type { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { waitForApprovalOutcome } from '../../../src/client/approval-wait.js';

describe('waitForApprovalOutcome', () => {
  it('refuses a wait without sinceMs (STEWARD_USAGE) and touches no Kafka', async () => {
    let admins = 0;
    const adapter = { admin: async () => (admins++, Promise.reject(new Error('no Kafka in this test'))) } as unknown as KafkaAdapter;
    for (const opts of [{ timeoutMs: 10 }, { timeoutMs: 10, sinceMs: Number.NaN }])
      await expect(waitForApprovalOutcome(adapter, 'p.approvals', 'ap-1', opts as never)).rejects.toMatchObject({ code: 'STEWARD_USAGE' });
    expect(admins).toBe(0);
    // with sinceMs it goes on to read offsets as of that time
    await expect(waitForApprovalOutcome(adapter, 'p.approvals', 'ap-1', { timeoutMs: 10, sinceMs: 1 })).rejects.toThrow('no Kafka in this test');
    expect(admins).toBe(1);
  });
});
