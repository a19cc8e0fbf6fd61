/**
 * The approvals stage's two inputs on real Redis (review finding 1, spec-decisions D35): approvers' answers are read
 * from acgp.approval-answers only, requests and outcomes from acgp.approvals only (Steward's principal), so broker
 * ACLs can keep an approver from forging an outcome or pre-creating a request. Messages are handed to the stage's
 * processor directly (the Kafka path is approvals.int.test.ts); the store is the real Redis one.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { RedisApprovalStore } from '../../../src/adapters/redis/approval-store.js';
import { RedisGateJobStore } from '../../../src/adapters/redis/gate-job-store.js';
import { signedAnswer } from '../../../src/cli/commands/approve.js';
import { ApprovalsProcessor } from '../../../src/consumers/approvals.js';
import { approvalAnswerJson, approvalOutcomeJson, approvalRequestJson } from '../../../src/contracts/approvals.js';
import { parseApproverRegistry } from '../../../src/engine/approvals/approvers.js';
import { answeredOutcome } from '../../../src/engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../../src/engine/approvals/policy.js';
import { StewardError } from '../../../src/errors.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

const NOW = 1_800_000_000_000;
const topics = topicNames('ap-topics');
const req = (id: string, o: Partial<ApprovalRequest> = {}): ApprovalRequest => ({
  approval_id: id, tool: 'process_refund', agent_id: 'a1', tenant: 'acme', agent_tier: 'ACL-2', trace_id: `t-${id}`, event_id: `e-${id}`,
  job_id: null, skill_id: null, role: 'supervisor', default_action: 'deny', requested_ms: NOW - 1000, deadline_ms: NOW + 3_600_000, args: { amount: 900 }, ...o,
});
const msg = (topic: string, key: string, value: string): InMessage => ({ topic, partition: 0, offset: '0', key: Buffer.from(key), value: Buffer.from(value), headers: {}, timestampMs: NOW });
const codeOf = (e: unknown) => (e instanceof StewardError ? e.code : String(e));

describe('approvals stage inputs: answers apart from requests and outcomes (real Redis)', () => {
  const redis = redisClient();
  const prefix = uniqueRedisPrefix('ap-topics');
  const store = new RedisApprovalStore(redis, { prefix });
  const alice = generateKeyPairSync('ed25519');
  const bob = generateKeyPairSync('ed25519');
  const pub = (k: typeof alice) => JSON.stringify(k.publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const priv = (k: typeof alice) => k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const reg = parseApproverRegistry(`approvers:\n  - { id: alice, public_keys: [${pub(alice)}], roles: [{ role: supervisor, tenants: [acme] }] }\n  - { id: bob, public_keys: [${pub(bob)}], roles: [{ role: clerk, tenants: [beta] }] }\n`, 'inline');
  const stage = new ApprovalsProcessor({ store, topics, approvers: () => reg, nowMs: () => NOW, answerWaitMs: 1500 });
  const answer = (id: string, who: 'alice' | 'bob', ts = NOW) => approvalAnswerJson(signedAnswer({ approval_id: id, decision: 'approve', approver: who, ts_ms: ts }, priv(who === 'alice' ? alice : bob)));
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    await redis.quit();
  });

  it('reads requests/outcomes from acgp.approvals and answers from acgp.approval-answers', () => {
    expect(stage.inputTopics).toEqual([topics.approvals, topics.approvalAnswers]);
    expect(topics.approvalAnswers).toBe('ap-topics.approval-answers');
  });

  it("an approver cannot forge an outcome or pre-create a request: the answers topic carries answers only", async () => {
    const id = 'ap-forged-outcome';
    await stage.process(msg(topics.approvals, id, approvalRequestJson(req(id))));
    // bob (clerk of another tenant) writes what he can write: the answers topic. A forged outcome there is refused …
    const forged = approvalOutcomeJson(answeredOutcome(req(id), { decision: 'approve', approver: 'bob' }, 'kafka', NOW));
    expect(codeOf(await stage.process(msg(topics.approvalAnswers, id, forged)).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_MESSAGE');
    // … and so is a pre-created request with a lax default and a past deadline (nothing stored under its id).
    const pre = 'ap-precreated';
    const lax = approvalRequestJson(req(pre, { default_action: 'approve', deadline_ms: 0, role: null }));
    expect(codeOf(await stage.process(msg(topics.approvalAnswers, pre, lax)).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_MESSAGE');
    expect(await store.request(pre)).toBeUndefined();
    expect((await store.status(id))?.status).toBe('pending');
    // his own answer is still checked for role: forbidden
    expect(codeOf(await stage.process(msg(topics.approvalAnswers, id, answer(id, 'bob'))).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_FORBIDDEN');
    expect((await store.status(id))?.status).toBe('pending');
  });

  it('an answer on acgp.approvals is refused (approvers do not write there); on acgp.approval-answers it decides', async () => {
    const id = 'ap-right-topic';
    await stage.process(msg(topics.approvals, id, approvalRequestJson(req(id))));
    expect(codeOf(await stage.process(msg(topics.approvals, id, answer(id, 'alice'))).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_MESSAGE');
    expect((await store.status(id))?.status).toBe('pending');
    const outs = await stage.process(msg(topics.approvalAnswers, id, answer(id, 'alice')));
    expect(outs.map((o) => o.topic)).toEqual([topics.approvals, topics.ledger]);
    expect(JSON.parse(String(outs[0]!.message.value))).toMatchObject({ kind: 'outcome', approval_id: id, status: 'approved', approver: 'alice', via: 'kafka' });
  });

  it('an authenticated answer read before its request (the topics are not ordered together) waits for it', async () => {
    const id = 'ap-early-answer';
    const early = stage.process(msg(topics.approvalAnswers, id, answer(id, 'alice')));
    await new Promise((r) => setTimeout(r, 300));
    await stage.process(msg(topics.approvals, id, approvalRequestJson(req(id))));
    expect((await early).length).toBe(2);
    expect((await store.status(id))?.status).toBe('approved');
    // an answer to an approval that never comes is dead-lettered after the wait
    expect(codeOf(await stage.process(msg(topics.approvalAnswers, 'ap-never', answer('ap-never', 'alice'))).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_UNKNOWN');
    // an unauthenticated one does not wait at all
    const t0 = performance.now();
    const forged = approvalAnswerJson(signedAnswer({ approval_id: 'ap-never', decision: 'approve', approver: 'alice', ts_ms: NOW }, priv(bob)));
    expect(codeOf(await stage.process(msg(topics.approvalAnswers, 'ap-never', forged)).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_SIGNATURE');
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('without the ACLs: an outcome forged onto acgp.approvals does not take the decided one out of the outbox', async () => {
    const id = 'ap-outbox';
    await stage.process(msg(topics.approvals, id, approvalRequestJson(req(id))));
    const outs = await stage.process(msg(topics.approvalAnswers, id, answer(id, 'alice')));
    const outbox = () => redis.zscore(`${prefix}{ap}:outbox`, id);
    expect(await outbox()).not.toBeNull();
    const forged = approvalOutcomeJson({ ...answeredOutcome(req(id), { decision: 'deny', approver: 'bob' }, 'kafka', NOW + 1) });
    expect(codeOf(await stage.process(msg(topics.approvals, id, forged)).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_OUTCOME_MISMATCH');
    expect(await outbox()).not.toBeNull();
    // the decided outcome read back confirms its publication
    await stage.process(msg(topics.approvals, id, String(outs[0]!.message.value)));
    expect(await outbox()).toBeNull();
    // an outcome Redis never decided (or whose record expired) is passed over
    expect(await stage.process(msg(topics.approvals, 'ap-unknown', approvalOutcomeJson(answeredOutcome(req('ap-unknown'), { decision: 'approve', approver: 'bob' }, 'kafka', NOW))))).toEqual([]);
  });

  it('an approved call of a job is recorded in the job (Redis gate job store) as ran, once per outcome read (D46); a denial is not', async () => {
    const jobs = new RedisGateJobStore(redis, { prefix });
    const withJobs = new ApprovalsProcessor({ store, topics, approvers: () => reg, nowMs: () => NOW, answerWaitMs: 1500, gateJobs: jobs });
    const key = { tenant: 'acme', agentId: 'a1', jobId: 'job-ap' };
    const id = 'ap-job-call';
    await withJobs.process(msg(topics.approvals, id, approvalRequestJson(req(id, { job_id: 'job-ap', tool: 'verify_identity' }))));
    const outs = await withJobs.process(msg(topics.approvalAnswers, id, answer(id, 'alice')));
    expect(await jobs.get(key, NOW)).toBeUndefined(); // recorded when the outcome is read back, not before
    const back = msg(topics.approvals, id, String(outs[0]!.message.value));
    await withJobs.process(back);
    await withJobs.process(back);
    const s = await jobs.get(key, NOW);
    expect(s?.tool_calls).toEqual([expect.objectContaining({ event_id: `e-${id}#approved`, tool: 'verify_identity', blocked: false, ts_ms: NOW })]);
    expect(s?.evidence_count).toBe(1);
    const denied = 'ap-job-denied';
    await withJobs.process(msg(topics.approvals, denied, approvalRequestJson(req(denied, { job_id: 'job-ap-2' }))));
    const d = answeredOutcome(req(denied, { job_id: 'job-ap-2' }), { decision: 'deny', approver: 'alice' }, 'http', NOW);
    await store.resolve(d, NOW);
    await withJobs.process(msg(topics.approvals, denied, approvalOutcomeJson(d)));
    expect(await jobs.get({ ...key, jobId: 'job-ap-2' }, NOW)).toBeUndefined();
  });

  it('a captured answer replayed later (signed outside the request window) is stale (review finding 6)', async () => {
    const id = 'ap-replayed';
    await stage.process(msg(topics.approvals, id, approvalRequestJson(req(id))));
    expect(codeOf(await stage.process(msg(topics.approvalAnswers, id, answer(id, 'alice', NOW - 86_400_000))).catch((e: unknown) => e))).toBe('STEWARD_APPROVAL_STALE');
    expect((await store.status(id))?.status).toBe('pending');
  });
});
