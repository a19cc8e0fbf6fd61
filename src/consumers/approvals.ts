/**
 * Approvals stage (docs/approvals.md, contracts C9): consumes acgp.approvals (written by Steward only) —
 *   request → stored in Redis with its deadline (RedisApprovalStore);
 *   outcome → its publication confirmed (the store's outbox entry removed); an approved call of a job recorded
 *             in the job as ran (the finalization gate's job store, D46);
 * and acgp.approval-answers (written by approvers; spec-decisions D35) —
 *   answer  → checked (approver registry: signature, signing time, role for the tenant and tier) and resolved.
 * An answer on acgp.approvals, or a request/outcome on the answers topic, is dead-lettered: with the split, broker
 * ACLs decide who can write requests and outcomes, and the stage keeps to it.
 * Timeouts: `ApprovalSweeper` claims due deadlines from Redis on every instance and resolves them with the
 * tool's default action; whoever resolves an approval first (answer, sweep, HTTP route) publishes its one
 * outcome to acgp.approvals (for waiting clients and the sink's approvals table) and a POLICY_DECISION draft
 * to acgp.ledger.
 */
import type { InMessage, StewardProducer } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { RedisApprovalStore } from '../adapters/redis/approval-store.js';
import { approvalOutcomeJson, parseApprovalAnswerMessage, parseApprovalMessage } from '../contracts/approvals.js';
import { checkAnswerFor, checkAnswerSignature, mayAnswer, type ApprovalDecision, type ApproverRegistry } from '../engine/approvals/approvers.js';
import { answeredOutcome, approvalLedgerDraft, timeoutOutcome, type ApprovalOutcome } from '../engine/approvals/outcome.js';
import type { ApprovalRequest } from '../engine/approvals/policy.js';
import { recordApprovedCall } from '../engine/gate/approved-call.js';
import type { GateJobStore } from '../engine/gate/types.js';
import { SIGNATURE_HEADER } from '../engine/identity.js';
import { StewardError } from '../errors.js';
import type { StageOutput, StageProcessor } from './stage-types.js';

export interface ApprovalsDeps {
  store: RedisApprovalStore;
  topics: TopicNames;
  /** The current approver registry (approvals.approvers_file); undefined: no answer is accepted. */
  approvers: () => ApproverRegistry | undefined;
  nowMs?: () => number;
  /**
   * How long an authenticated answer waits for its request to be stored (default 10 s): the two travel on
   * different topics now, so an answer may be read before the request it answers.
   */
  answerWaitMs?: number;
  /** Signs an outcome's record value (x-steward-signature) with Steward's ledger key; unset: outcomes go unsigned. */
  signOutcome?: (value: string) => string;
  /**
   * The finalization gate's job store (docs/gate.md "Job state"): an approved call of a job is recorded there as
   * ran (spec-decisions D46; decide() recorded it as not run while it waited). Unset: jobs are not told.
   */
  gateJobs?: GateJobStore;
}

/** The outcome message and its ledger draft: what the resolver of an approval publishes. */
export function outcomeOutputs(topics: TopicNames, o: ApprovalOutcome, sign?: (value: string) => string): StageOutput[] {
  const draft = approvalLedgerDraft(o);
  const value = approvalOutcomeJson(o);
  return [
    { topic: topics.approvals, message: { key: o.approval_id, value, ...(sign && { headers: { [SIGNATURE_HEADER]: sign(value) } }) } },
    { topic: topics.ledger, message: { key: draft.agent_id, value: JSON.stringify(draft) } },
  ];
}

/** The fields that make an outcome (what the resolver decided, when and how): equal for a republished outcome. */
const sameOutcome = (a: ApprovalOutcome, b: ApprovalOutcome): boolean =>
  a.status === b.status && a.decision === b.decision && a.approver === b.approver && a.via === b.via && a.decided_ms === b.decided_ms;

export class ApprovalsProcessor implements StageProcessor {
  readonly stage = 'approvals';
  readonly inputTopics: string[];

  constructor(private readonly d: ApprovalsDeps) {
    this.inputTopics = [d.topics.approvals, d.topics.approvalAnswers];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const now = (this.d.nowMs ?? Date.now)();
    if (m.topic === this.d.topics.approvalAnswers) return this.answer(m, now);
    const msg = parseApprovalMessage(m.value);
    if (msg.kind === 'answer') throw new StewardError('STEWARD_APPROVAL_MESSAGE', `an answer on ${this.d.topics.approvals}: approvers answer on ${this.d.topics.approvalAnswers}`);
    if (msg.kind === 'request') {
      const { kind: _k, ...req } = msg;
      await this.d.store.create(req, now);
      return [];
    }
    // Confirm only the outcome Redis decided: were an outcome forged onto this topic (a deployment without the
    // ACLs of docs/security.md), it must not take the real one out of the outbox (it would never be re-sent).
    const st = await this.d.store.status(msg.approval_id);
    if (!st?.outcome) return []; // an outcome whose record expired (a re-read topic) or that Redis never decided
    if (!sameOutcome(st.outcome, msg)) throw new StewardError('STEWARD_APPROVAL_OUTCOME_MISMATCH', `outcome of ${msg.approval_id} on ${this.d.topics.approvals} is not the one decided (${st.outcome.status} by ${st.outcome.approver ?? 'timeout'} at ${st.outcome.decided_ms})`);
    // Every outcome, whoever decided it (an answer, the HTTP route, a timeout), passes here at least once; the record
    // is idempotent, and made before the publication is confirmed so that a failure redelivers it.
    if (this.d.gateJobs) await recordApprovedCall(this.d.gateJobs, st.outcome);
    await this.d.store.published(msg.approval_id);
    return [];
  }

  private async answer(m: InMessage, now: number): Promise<StageOutput[]> {
    const msg = parseApprovalAnswerMessage(m.value);
    const reg = this.d.approvers();
    if (!reg) throw new StewardError('STEWARD_APPROVAL_UNKNOWN_APPROVER', 'no approver registry is configured (approvals.approvers_file): answers cannot be authenticated');
    // Authenticated first: only a registry approver's answer may hold its partition while its request arrives.
    const sig = checkAnswerSignature(reg, msg);
    if (!sig.ok) throw new StewardError(sig.code as `STEWARD_APPROVAL_${string}`, sig.message);
    const req = await this.requestFor(msg.approval_id);
    if (!req) throw new StewardError('STEWARD_APPROVAL_UNKNOWN', `no pending or recent approval ${msg.approval_id}`);
    const check = checkAnswerFor(sig.approver, msg, req);
    if (!check.ok) throw new StewardError(check.code as `STEWARD_APPROVAL_${string}`, check.message);
    const res = await this.d.store.resolve(answeredOutcome(req, msg, 'kafka', now), now);
    // A late answer (already answered or timed out) changes nothing: the first outcome stands.
    return res.kind === 'won' ? outcomeOutputs(this.d.topics, res.outcome, this.d.signOutcome) : [];
  }

  private async requestFor(id: string): Promise<ApprovalRequest | undefined> {
    const until = performance.now() + (this.d.answerWaitMs ?? 10_000);
    for (;;) {
      const req = await this.d.store.request(id);
      if (req || performance.now() >= until) return req;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** The HTTP route's answer (docs/approvals.md "Answering"): the approver authenticated by its API key. */
export async function answerOverHttp(
  d: ApprovalsDeps & { producer: StewardProducer },
  apiKey: string,
  approvalId: string,
  decision: ApprovalDecision,
  reason: string | undefined,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const reg = d.approvers();
  const ap = reg?.byApiKey(apiKey);
  if (!ap) return { status: 401, body: { error: 'unknown approver key' } };
  const req = await d.store.request(approvalId);
  if (!req) return { status: 404, body: { error: `no approval ${approvalId}` } };
  if (!mayAnswer(ap, req)) return { status: 403, body: { error: `approver '${ap.id}' may not answer this approval (role ${req.role ?? '(any)'}, tenant ${req.tenant}, tier ${req.agent_tier})` } };
  const now = (d.nowMs ?? Date.now)();
  const res = await d.store.resolve(answeredOutcome(req, { decision, approver: ap.id, ...(reason && { reason }) }, 'http', now), now);
  if (res.kind === 'unknown') return { status: 404, body: { error: `no approval ${approvalId}` } };
  if (res.kind === 'won') await d.producer.send(outcomeOutputs(d.topics, res.outcome, d.signOutcome).map((o) => ({ topic: o.topic, messages: [o.message] })));
  return { status: res.kind === 'won' ? 200 : 409, body: { ...res.outcome, request: undefined, already_decided: res.kind === 'decided' } };
}

/** An approval's request and status (and outcome once decided), for the agent's status route; undefined: unknown. */
export async function approvalStatusOf(store: RedisApprovalStore, approvalId: string): Promise<{ request: ApprovalRequest; status: string; outcome?: ApprovalOutcome } | undefined> {
  const request = await store.request(approvalId);
  if (!request) return undefined;
  const st = await store.status(approvalId);
  return { request, status: st?.status ?? 'pending', ...(st?.outcome && { outcome: st.outcome }) };
}

export interface SweeperOptions {
  intervalMs?: number;
  batch?: number;
  onError?: (e: unknown) => void;
}

/**
 * Fires due timeouts and re-publishes outcomes whose publisher died. Runs on every instance; the store's
 * claim and resolve make each approval time out once, whichever instance gets there first.
 */
export class ApprovalSweeper {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly d: ApprovalsDeps & { producer: StewardProducer },
    private readonly o: SweeperOptions = {},
  ) {}

  /** One sweep: how many approvals timed out and how many outcomes were published again. */
  async sweepOnce(): Promise<{ timedOut: number; republished: number }> {
    const now = (this.d.nowMs ?? Date.now)();
    const { due, unpublished } = await this.d.store.claim(now, this.o.batch ?? 100);
    const outs: StageOutput[] = [];
    let timedOut = 0;
    for (const req of due) {
      const res = await this.d.store.resolve(timeoutOutcome(req, now), now);
      if (res.kind === 'won') {
        timedOut++;
        outs.push(...outcomeOutputs(this.d.topics, res.outcome, this.d.signOutcome));
      }
    }
    for (const o of unpublished) outs.push(...outcomeOutputs(this.d.topics, o, this.d.signOutcome));
    if (outs.length) await this.d.producer.send(outs.map((o) => ({ topic: o.topic, messages: [o.message] })));
    return { timedOut, republished: unpublished.length };
  }

  start(): void {
    const tick = () => {
      this.running = this.sweepOnce()
        .then(() => undefined)
        .catch((e) => this.o.onError?.(e))
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.o.intervalMs ?? 1000);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    if (t) clearTimeout(t);
    await this.running;
  }
}
