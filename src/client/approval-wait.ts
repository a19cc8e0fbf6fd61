/**
 * The agent's side of an approval (docs/approvals.md "Waiting"): after a decision `escalate` with an
 * `approval_id`, wait for its one outcome on acgp.approvals. The read starts at the topic's offsets as of
 * `sinceMs` (by default the decision's time minus a minute), so an outcome published before the wait began
 * — an approver faster than the agent, or an agent restarted mid-wait — is still found. A group of its own
 * per wait, never committing: waiting moves no offsets of anyone.
 */
import { randomBytes } from 'node:crypto';
import type { KafkaAdapter } from '../adapters/kafka/client.js';
import { parseApprovalMessage } from '../contracts/approvals.js';
import type { ApprovalOutcome } from '../engine/approvals/outcome.js';

export interface ApprovalWaitOptions {
  /** Give up after this long (then `undefined`: the agent applies its own policy, e.g. not running the tool). */
  timeoutMs: number;
  /** Read outcomes published from this time on (ms); default one minute before the call. */
  sinceMs?: number;
}

export async function waitForApprovalOutcome(adapter: KafkaAdapter, topic: string, approvalId: string, o: ApprovalWaitOptions): Promise<ApprovalOutcome | undefined> {
  const since = o.sinceMs ?? Date.now() - 60_000;
  const admin = await adapter.admin();
  let starts: { partition: number; offset: string }[];
  try {
    starts = await admin.offsetsAtTime(topic, since);
  } finally {
    await admin.disconnect();
  }
  const consumer = adapter.consumer({ groupId: `steward-approval-wait-${randomBytes(6).toString('hex')}`, maxWaitTimeMs: 200 });
  let done!: (v: ApprovalOutcome | undefined) => void;
  const result = new Promise<ApprovalOutcome | undefined>((r) => (done = r));
  const timer = setTimeout(() => done(undefined), o.timeoutMs);
  try {
    consumer.onGroupJoin(() => {
      for (const s of starts) if (BigInt(s.offset) >= 0n) consumer.seek(topic, s.partition, s.offset);
    });
    await consumer.subscribe([topic], true);
    void consumer
      .runBatches(
        async (batch, ctl) => {
          for (const m of batch.messages) {
            if (m.key?.toString('utf8') !== approvalId) continue;
            try {
              const msg = parseApprovalMessage(m.value);
              if (msg.kind === 'outcome') {
                const { kind: _k, ...outcome } = msg;
                done(outcome);
              }
            } catch {
              // not ours to judge: the approvals stage dead-letters malformed messages
            }
            ctl.resolveOffset(m.offset);
          }
        },
        { autoCommit: false },
      )
      .catch(() => done(undefined));
    return await result;
  } finally {
    clearTimeout(timer);
    await consumer.disconnect().catch(() => undefined);
  }
}
