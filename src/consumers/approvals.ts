/**
 * Approvals stage (docs/approvals.md, contracts C9): consumes acgp.approvals —
 *   request → stored in Redis with its deadline (RedisApprovalStore);
 *   answer  → checked (approver registry: signature, role for the tenant and tier) and resolved;
 *   outcome → its publication confirmed (the store's outbox entry removed).
 * Timeouts: `ApprovalSweeper` claims due deadlines from Redis on every instance and resolves them with the
 * tool's default action; whoever resolves an approval first (answer, sweep, HTTP route) publishes its one
 * outcome to acgp.approvals (for waiting clients and the sink's approvals table) and a POLICY_DECISION draft
 * to acgp.ledger.
 */
import type { InMessage, StewardProducer } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { RedisApprovalStore } from '../adapters/redis/approval-store.js';
import { approvalOutcomeJson, parseApprovalMessage } from '../contracts/approvals.js';
import { checkSignedAnswer, mayAnswer, type ApprovalDecision, type ApproverRegistry } from '../engine/approvals/approvers.js';
import { answeredOutcome, approvalLedgerDraft, timeoutOutcome, type ApprovalOutcome } from '../engine/approvals/outcome.js';
import { StewardError } from '../errors.js';
import type { StageOutput, StageProcessor } from './stage-types.js';

export interface ApprovalsDeps {
  store: RedisApprovalStore;
  topics: TopicNames;
  /** The current approver registry (approvals.approvers_file); undefined: no answer is accepted. */
  approvers: () => ApproverRegistry | undefined;
  nowMs?: () => number;
}

/** The outcome message and its ledger draft: what the resolver of an approval publishes. */
export function outcomeOutputs(topics: TopicNames, o: ApprovalOutcome): StageOutput[] {
  const draft = approvalLedgerDraft(o);
  return [
    { topic: topics.approvals, message: { key: o.approval_id, value: approvalOutcomeJson(o) } },
    { topic: topics.ledger, message: { key: draft.agent_id, value: JSON.stringify(draft) } },
  ];
}

export class ApprovalsProcessor implements StageProcessor {
  readonly stage = 'approvals';
  readonly inputTopics: string[];

  constructor(private readonly d: ApprovalsDeps) {
    this.inputTopics = [d.topics.approvals];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const msg = parseApprovalMessage(m.value);
    const now = (this.d.nowMs ?? Date.now)();
    if (msg.kind === 'request') {
      const { kind: _k, ...req } = msg;
      await this.d.store.create(req, now);
      return [];
    }
    if (msg.kind === 'outcome') {
      await this.d.store.published(msg.approval_id);
      return [];
    }
    const req = await this.d.store.request(msg.approval_id);
    if (!req) throw new StewardError('STEWARD_APPROVAL_UNKNOWN', `no pending or recent approval ${msg.approval_id}`);
    const reg = this.d.approvers();
    if (!reg) throw new StewardError('STEWARD_APPROVAL_UNKNOWN_APPROVER', 'no approver registry is configured (approvals.approvers_file): answers cannot be authenticated');
    const check = checkSignedAnswer(reg, msg, req);
    if (!check.ok) throw new StewardError(check.code as `STEWARD_APPROVAL_${string}`, check.message);
    const res = await this.d.store.resolve(answeredOutcome(req, msg, 'kafka', now), now);
    // A late answer (already answered or timed out) changes nothing: the first outcome stands.
    return res.kind === 'won' ? outcomeOutputs(this.d.topics, res.outcome) : [];
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
  if (res.kind === 'won') await d.producer.send(outcomeOutputs(d.topics, res.outcome).map((o) => ({ topic: o.topic, messages: [o.message] })));
  return { status: res.kind === 'won' ? 200 : 409, body: { ...res.outcome, request: undefined, already_decided: res.kind === 'decided' } };
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
        outs.push(...outcomeOutputs(this.d.topics, res.outcome));
      }
    }
    for (const o of unpublished) outs.push(...outcomeOutputs(this.d.topics, o));
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
