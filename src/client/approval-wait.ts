/**
 * The agent's side of an approval (docs/approvals.md "Waiting"): after a decision `escalate` with an
 * `approval_id`, wait for its one outcome on acgp.approvals. The read starts at the topic's offsets as of
 * `sinceMs`, which the caller gives: the decision's `event_time_ms` minus limits.max_event_time_skew_ms and a
 * minute (the request's time is the broker's, the event time the agent's, clamped to that skew). So an outcome
 * published before the wait began — an approver faster than the agent, or an agent restarted mid-wait, even
 * hours later — is still found. No default: "a minute before the call" missed every outcome decided more than a
 * minute before an agent restarted and waited again. A group of its own per wait, never committing: waiting
 * moves no offsets of anyone.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { headerText, type KafkaAdapter } from '../adapters/kafka/client.js';
import { parseApprovalMessage } from '../contracts/approvals.js';
import { StewardError } from '../errors.js';
import { outcomeSignedBy, type ApprovalOutcome } from '../engine/approvals/outcome.js';
import { SIGNATURE_HEADER } from '../engine/identity.js';

export interface ApprovalWaitOptions {
  /** Give up after this long (then `undefined`: the agent applies its own policy, e.g. not running the tool). */
  timeoutMs: number;
  /** Read outcomes published from this time on (ms), required: the decision's `event_time_ms` minus 6 min (docs/approvals.md). */
  sinceMs: number;
  /**
   * Steward's public keys (PEM: the ledger key's, `steward keys generate`): when given, only an outcome signed by
   * one of them counts — one forged onto acgp.approvals is passed over (docs/approvals.md "Waiting").
   */
  stewardKeys?: readonly string[];
}

export async function waitForApprovalOutcome(adapter: KafkaAdapter, topic: string, approvalId: string, o: ApprovalWaitOptions): Promise<ApprovalOutcome | undefined> {
  const since = o.sinceMs;
  if (typeof since !== 'number' || !Number.isFinite(since)) throw new StewardError('STEWARD_USAGE', "waitForApproval needs sinceMs (the decision's event_time_ms minus 6 minutes): an outcome decided before the wait is read from there");
  const keys = o.stewardKeys?.map((pem) => createPublicKey(pem));
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
              if (msg.kind === 'outcome' && (!keys || outcomeSignedBy(m.value!, headerText(m, SIGNATURE_HEADER), keys))) {
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
