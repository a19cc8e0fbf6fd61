/**
 * Steward-signed approval outcomes (review finding 1 of issue #25, spec-decisions D35) on real Kafka and Redis: the
 * approvals stage signs each outcome it publishes with the ledger key (x-steward-signature over the record value),
 * and a client given Steward's public key acts only on a signed outcome — an outcome forged onto acgp.approvals (a
 * deployment without the approval-topic ACLs) first in the partition is passed over; without keys it would be taken.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaAdapter, type InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { approvalOutcomeSigner } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { RedisApprovalStore } from '../../../src/adapters/redis/approval-store.js';
import { signedAnswer } from '../../../src/cli/commands/approve.js';
import { waitForApprovalOutcome } from '../../../src/client/approval-wait.js';
import { ApprovalsProcessor } from '../../../src/consumers/approvals.js';
import { approvalAnswerJson, approvalOutcomeJson, approvalRequestJson } from '../../../src/contracts/approvals.js';
import { parseApproverRegistry } from '../../../src/engine/approvals/approvers.js';
import { answeredOutcome, outcomeSignedBy, signOutcomeBytes } from '../../../src/engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../../src/engine/approvals/policy.js';
import { SIGNATURE_HEADER } from '../../../src/engine/identity.js';
import { pipelineConfig } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueName, uniqueRedisPrefix, withTopics } from '../setup/helpers.js';

const pem = () => {
  const k = generateKeyPairSync('ed25519');
  return { priv: k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), pub: k.publicKey.export({ type: 'spki', format: 'pem' }).toString() };
};

describe('signed approval outcomes (real Kafka, Redis)', () => {
  const redis = redisClient();
  const prefix = uniqueRedisPrefix('ap-signed');
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
  });

  it('the stage signs its outcomes; a verifying client takes the signed one, not a forged one ahead of it', async () => {
    const steward = pem();
    const other = pem();
    const alice = pem();
    const now = Date.now();
    const topics = topicNames(uniqueName('ap-signed'));
    await withTopics([topics.approvals], async () => {
      const reg = parseApproverRegistry(`approvers:\n  - { id: alice, public_keys: [${JSON.stringify(alice.pub)}], roles: [supervisor] }\n`, 'inline');
      const stage = new ApprovalsProcessor({ store: new RedisApprovalStore(redis, { prefix }), topics, approvers: () => reg, signOutcome: approvalOutcomeSigner({ signing: { key: steward.priv } }) });
      const id = 'ap-signed-1';
      const req: ApprovalRequest = {
        approval_id: id, tool: 'process_refund', agent_id: 'a1', tenant: 'acme', agent_tier: 'ACL-2', trace_id: 't', event_id: 'e', job_id: null,
        skill_id: null, role: 'supervisor', default_action: 'deny', requested_ms: now, deadline_ms: now + 3_600_000, args: null,
      };
      const inMsg = (topic: string, value: string): InMessage => ({ topic, partition: 0, offset: '0', key: Buffer.from(id), value: Buffer.from(value), headers: {}, timestampMs: now });
      await stage.process(inMsg(topics.approvals, approvalRequestJson(req)));
      const outs = await stage.process(inMsg(topics.approvalAnswers, approvalAnswerJson(signedAnswer({ approval_id: id, decision: 'deny', approver: 'alice', ts_ms: now }, alice.priv))));
      const real = outs[0]!.message;
      const sig = real.headers?.[SIGNATURE_HEADER] as string;
      expect(outcomeSignedBy(Buffer.from(String(real.value)), sig, [steward.pub])).toBe(true);
      expect(outcomeSignedBy(Buffer.from(String(real.value)), sig, [other.pub])).toBe(false);

      // Forged first: unsigned, and signed by another key, both claiming "approved"; then the real one.
      const forged = approvalOutcomeJson(answeredOutcome(req, { decision: 'approve', approver: 'bob' }, 'kafka', now));
      const adapter = new KafkaAdapter(pipelineConfig(uniqueName('cfg')).kafka);
      const producer = await adapter.producer();
      try {
        await producer.send([
          { topic: topics.approvals, messages: [{ key: id, value: forged }] },
          { topic: topics.approvals, messages: [{ key: id, value: forged, headers: { [SIGNATURE_HEADER]: signOutcomeBytes(forged, other.priv) } }] },
          { topic: topics.approvals, messages: [{ key: id, value: String(real.value), headers: real.headers }] },
        ]);
        const verified = await waitForApprovalOutcome(adapter, topics.approvals, id, { timeoutMs: 30_000, sinceMs: now - 60_000, stewardKeys: [steward.pub] });
        expect(verified).toMatchObject({ approval_id: id, status: 'denied', approver: 'alice' });
        // without Steward's keys the first outcome in the partition wins: the forged one
        const unverified = await waitForApprovalOutcome(adapter, topics.approvals, id, { timeoutMs: 30_000, sinceMs: now - 60_000 });
        expect(unverified).toMatchObject({ status: 'approved', approver: 'bob' });
      } finally {
        await producer.disconnect();
      }
    });
  }, 120_000);
});
