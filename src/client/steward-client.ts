/**
 * StewardClient: the agent-side SDK. `decide()` publishes a trace and awaits its tripwire-stage decision
 * on this instance's own partition of the replies topic; it never rejects: when no decision arrives within
 * `timeoutMs` — counted from the call, connecting included — or the client cannot connect or publish, the
 * governance fallback (spec-decisions D5) is returned with `fallback: true` and the reason is logged. When the
 * stage refuses the trace (dead-lettered: invalid, too large, evaluation error) it answers at once with a
 * fail-closed `block` carrying `rejected: {code, message}`. `publish()` is fire-and-forget but rejects
 * when the client cannot connect or the send fails; `onVerdict()` receives the CTQ verdicts of traces this
 * instance published. A failed connect is not cached: the next call tries again.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { KafkaAdapter, type KafkaSettings, type StewardConsumer, type StewardProducer, type InMessage, headerText } from '../adapters/kafka/client.js';
import { topicNames, type TopicNames } from '../adapters/kafka/topics.js';
import { REPLY_HEADERS, replyHeaders } from '../adapters/kafka/request-reply.js';
import { assertWellFormedIds, createRegistry, encodeTrace, registerAvro } from '../adapters/kafka/serde.js';
import { isMessageTooLarge } from '../adapters/kafka/kafka-error.js';
import { rejectedDecision, type DecisionMessage, type GateReplyMessage, type VerdictMessage } from '../contracts/messages.js';
import { DEFAULT_FINALIZE_TIMEOUT_MS, gateAnswerOf, isDecision, type ClientGateAnswer } from './gate-answer.js';
import { GATE_HOOKS } from '../consumers/finalize-message.js';
import { waitForApprovalOutcome, type ApprovalWaitOptions } from './approval-wait.js';
import type { ApprovalOutcome } from '../engine/approvals/outcome.js';

export { DEFAULT_FINALIZE_TIMEOUT_MS, finalizeTimeoutFor, type ClientGateAnswer } from './gate-answer.js';
import { parseTimestamp } from '../engine/time.js';
import { isApproved, type AclTier, type FallbackOnTimeout, type Intervention, type Trace } from '../engine/types.js';
import { StewardError } from '../errors.js';
import { SIGNATURE_HEADER, signTraceBytes } from '../engine/identity.js';
import type { Logger } from '../logger.js';

export interface StewardClientOptions {
  kafka: KafkaSettings | KafkaAdapter;
  topicPrefix?: string;
  /** Partition of the replies topic this instance reads; random by default. */
  replyPartition?: number;
  /** Encode traces as Avro through this registry (Confluent wire format); JSON otherwise. */
  avro?: { registryUrl: string };
  /** Governance contract fallback on timeout; default by tier: allow_and_log below ACL-4, escalate from ACL-4. */
  fallbackOnTimeout?: FallbackOnTimeout;
  tier?: AclTier;
  /** decide()'s wait when the call names none (default 1 000 ms). */
  defaultTimeoutMs?: number;
  /**
   * finalize()'s wait when the call names none: default DEFAULT_FINALIZE_TIMEOUT_MS (25 s), above the gate's
   * worst case with the default 10 s judge timeout (finalizeTimeoutFor; spec-decisions D40). Not defaultTimeoutMs:
   * a final answer waits for an LLM judge, a tool call for the tripwire stage.
   */
  finalizeTimeoutMs?: number;
  logger?: Logger;
  /**
   * The agent's Ed25519 private key (PEM): every trace is signed (x-steward-signature over the record bytes),
   * which Steward requires of agents whose registry entry lists public keys (docs/security.md).
   */
  signingKey?: string;
}

/** What decide() returns: the stage's decision, a fail-closed rejection (`rejected`), or the governance fallback (`fallback: true`). */
export type ClientDecision = DecisionMessage;

interface Pending {
  /** A decision (decide(), or a rejection / fallback of a finalize() call) or, for finalize(), the gate's answer. */
  resolve(d: ClientDecision | GateReplyMessage): void;
  /** A finalize() call: waits for a reply of kind `gate`. */
  gate?: boolean;
  trace: Trace;
}

const TIER_RANK: Record<AclTier, number> = { 'ACL-0': 0, 'ACL-1': 1, 'ACL-2': 2, 'ACL-3': 3, 'ACL-4': 4, 'ACL-5': 5 };

export class StewardClient {
  readonly topics: TopicNames;
  readonly instanceId = randomBytes(6).toString('hex');
  private readonly adapter: KafkaAdapter;
  private producer?: StewardProducer;
  private replies?: StewardConsumer;
  private replyPartition = 0;
  private seq = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly verdictHandlers: ((v: VerdictMessage) => void | Promise<void>)[] = [];
  private readonly lastDecision = new Map<string, DecisionMessage>();
  /** Calls answered with the fallback before their decision arrived, by correlation id (most recent only). */
  private readonly answered = new Map<string, { resolve: (d: ClientDecision) => void; trace: Trace }>();
  private avroSchemaId?: number;
  private registry?: ReturnType<typeof createRegistry>;
  private connected?: Promise<void>;

  constructor(private readonly opts: StewardClientOptions) {
    this.adapter = opts.kafka instanceof KafkaAdapter ? opts.kafka : new KafkaAdapter(opts.kafka, opts.logger);
    this.topics = topicNames(opts.topicPrefix ?? 'acgp');
  }

  /** Idempotent; decide/publish call it lazily. A failed attempt is forgotten, so the next call retries. */
  connect(): Promise<void> {
    if (!this.connected) {
      const attempt = this.doConnect();
      this.connected = attempt;
      attempt.catch(() => {
        if (this.connected === attempt) this.connected = undefined;
      });
    }
    return this.connected;
  }

  private async doConnect(): Promise<void> {
    try {
      await this.connectOnce();
    } catch (e) {
      // Leave nothing half-open behind a failed attempt; the next connect() starts over.
      const producer = this.producer;
      const replies = this.replies;
      this.producer = undefined;
      this.replies = undefined;
      await replies?.disconnect().catch(() => undefined);
      await producer?.disconnect().catch(() => undefined);
      throw e;
    }
  }

  private async connectOnce(): Promise<void> {
    const admin = await this.adapter.admin();
    try {
      // Checked first: asking a missing topic's offsets retries for many seconds before failing.
      if (!(await admin.listTopics()).includes(this.topics.replies)) {
        throw new StewardError('STEWARD_KAFKA', `replies topic ${this.topics.replies} does not exist (run steward topics create)`);
      }
      const offsets = await admin.topicOffsets(this.topics.replies);
      if (offsets.length === 0) throw new StewardError('STEWARD_KAFKA', `replies topic ${this.topics.replies} has no partitions (run steward topics create)`);
      this.replyPartition = this.opts.replyPartition ?? randomInt(offsets.length);
      const high = offsets.find((o) => o.partition === this.replyPartition)?.high ?? '0';
      const producer = await this.adapter.producer();
      this.producer = producer;
      if (this.opts.avro) {
        this.registry = createRegistry(this.opts.avro.registryUrl);
        this.avroSchemaId = await registerAvro(this.registry, 'trace', `${this.topics.traces}-value`);
      }
      // A one-member group with a fixed assignment: kafkajs' stand-in for consumer.assign().
      const c = this.adapter.consumer({ groupId: `steward-client-${this.instanceId}`, assign: { topic: this.topics.replies, partitions: [this.replyPartition] }, maxWaitTimeMs: 100 });
      this.replies = c;
      let crashed: (e: unknown) => void = () => undefined;
      let isJoined = false;
      const joined = new Promise<void>((res, rej) => {
        crashed = rej;
        c.onGroupJoin(() => {
          isJoined = true;
          res();
        });
      });
      joined.catch(() => undefined);
      // A reply consumer kafkajs gives up on would leave every later decide() waiting for replies nobody reads:
      // before joining, the connect fails; afterwards the client drops its connection, and the next call reconnects.
      c.onCrash((err, willRestart) => {
        if (willRestart) return;
        crashed(err);
        // Before the join the failing connect attempt cleans up itself (doConnect), and must be the only one to.
        if (!isJoined || this.replies !== c) return;
        this.opts.logger?.warn({ err }, 'reply consumer crashed: reconnecting on the next call');
        const producer = this.producer;
        this.replies = undefined;
        this.producer = undefined;
        this.connected = undefined;
        void c.disconnect().catch(() => undefined);
        void producer?.disconnect().catch(() => undefined);
      });
      await c.subscribe([this.topics.replies], false);
      await c.runBatches(async (batch, ctl) => {
        for (const m of batch.messages) {
          this.onReply(m);
          ctl.resolveOffset(m.offset);
        }
      }, { partitionsConcurrently: 1 });
      // Replies produced after `high` are ours to see; nothing older matters.
      c.seek(this.topics.replies, this.replyPartition, high);
      await joined;
    } finally {
      await admin.disconnect();
    }
  }

  private onReply(m: InMessage): void {
    const corr = headerText(m, REPLY_HEADERS.correlation);
    if (!corr || !corr.startsWith(this.instanceId + ':') || m.value === null) return;
    const kind = headerText(m, REPLY_HEADERS.kind) ?? 'decision';
    let body: unknown;
    try {
      body = JSON.parse(m.value.toString('utf8'));
    } catch {
      return;
    }
    if (kind === 'gate') {
      const p = this.pending.get(corr);
      const g = body as GateReplyMessage;
      // As for decisions: an answer counts only for the trace it names.
      if (p?.gate && g && g.trace_id === p.trace.trace_id && g.agent_id === p.trace.agent_id) p.resolve(g);
      return;
    }
    if (kind === 'verdict') {
      for (const h of this.verdictHandlers) {
        Promise.resolve(h(body as VerdictMessage)).catch((e) => this.opts.logger?.warn({ err: e }, 'onVerdict handler failed'));
      }
      return;
    }
    // A call that already answered (timeout) still learns its decision for the cached_decision fallback.
    const p = this.pending.get(corr) ?? this.answered.get(corr);
    if (p && !this.pending.has(corr)) this.answered.delete(corr);
    let d = body as ClientDecision;
    const rejected = d.rejected;
    if (rejected !== undefined) {
      // The stage refused the trace and may not have been able to read its ids: the client knows them.
      // A refusal is not a policy decision, so it never feeds the cached_decision fallback.
      if (p) d = { ...d, trace_id: p.trace.trace_id, agent_id: p.trace.agent_id, hook: p.trace.hook, ...(typeof p.trace.tool === 'string' ? { tool: p.trace.tool } : {}) };
      this.opts.logger?.warn({ trace_id: d.trace_id, code: rejected.code, reason: rejected.message }, 'trace rejected by the tripwire stage');
    } else {
      // Anyone who can write to acgp.traces can copy another client's reply headers onto a trace of their own:
      // a decision answers only the trace it names (and only such a decision may be replayed by cached_decision).
      if (!p || d.trace_id !== p.trace.trace_id || d.agent_id !== p.trace.agent_id) {
        if (p) this.opts.logger?.warn({ expected: p.trace.trace_id, got: d.trace_id }, 'reply names another trace than the one waiting for it: ignored');
        return;
      }
      // Most recent agent+tool pairs only (tool names come from traces: unbounded otherwise).
      const k = cacheKey(d.agent_id, d.tool);
      this.lastDecision.delete(k);
      this.lastDecision.set(k, d);
      if (this.lastDecision.size > MAX_CACHED_DECISIONS) this.lastDecision.delete(this.lastDecision.keys().next().value as string);
    }
    p?.resolve(d);
  }

  private async send(trace: Trace, correlation: string): Promise<void> {
    await this.connect();
    let value: Buffer;
    try {
      assertWellFormedIds(trace);
      value = await encodeTrace(trace, this.registry && this.avroSchemaId !== undefined ? { registry: this.registry, schemaId: this.avroSchemaId } : undefined);
    } catch (e) {
      // Not the broker's fault, and no retry helps: the stage would reject such a trace too.
      throw new StewardError('STEWARD_TRACE_SCHEMA', `trace cannot be encoded: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    const headers: Record<string, string> = replyHeaders({ topic: this.topics.replies, partition: this.replyPartition, correlation_id: correlation });
    if (this.opts.signingKey) headers[SIGNATURE_HEADER] = signTraceBytes(value, this.opts.signingKey);
    await this.producer!.send([{ topic: this.topics.traces, messages: [{ key: trace.agent_id, value, headers }] }]);
  }

  /**
   * Publishes the trace and waits for its decision. Never rejects: within `timeoutMs` of the call
   * (connecting included) it returns the stage's decision, a fail-closed `block` with `rejected` when the
   * stage refused the trace, or else the governance fallback (`fallback: true`, reason logged) — also at
   * once when connecting or publishing fails. A trace still being published when the time is up is sent
   * anyway (its decision is recorded on acgp.decisions; this call has already answered).
   * A `final_answer` / `user_feedback` (the gate's) is answered at once, unsent: `block`, `rejected.code`
   * STEWARD_USAGE, naming finalize() / publish() — not the fallback, approved at ACL-2 (spec-decisions D49).
   */
  async decide(trace: Trace, opts: { timeoutMs?: number } = {}): Promise<ClientDecision> {
    if (GATE_HOOKS.has(trace.hook)) {
      const use = trace.hook === 'final_answer' ? 'finalize() (POST /v1/finalize) waits for its answer' : 'publish() sends it (nothing answers feedback)';
      return this.rejectedDecision(trace, 'STEWARD_USAGE', `decide() answers tool calls; a ${trace.hook} trace is the finalization gate's: ${use} (spec-decisions D49)`);
    }
    // Unguessable per call: a correlation id is all a reply needs to be routed to this call.
    return (await this.request(trace, `${this.instanceId}:${++this.seq}.${randomBytes(8).toString('hex')}`, opts.timeoutMs, false)) as ClientDecision;
  }

  private request(trace: Trace, correlation: string, askedMs: number | undefined, gate: boolean): Promise<ClientDecision | GateReplyMessage> {
    // setTimeout fires at once beyond 2^31-1 ms (and on NaN/Infinity): clamp, never answer early.
    const asked = askedMs ?? (gate ? (this.opts.finalizeTimeoutMs ?? DEFAULT_FINALIZE_TIMEOUT_MS) : (this.opts.defaultTimeoutMs ?? 1000));
    const timeoutMs = Number.isNaN(asked) ? 1000 : Math.min(MAX_TIMER_MS, Math.max(0, asked));
    return new Promise<ClientDecision | GateReplyMessage>((resolve) => {
      let done = false;
      let sent = false;
      const finish = (d: ClientDecision | GateReplyMessage) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const p = this.pending.get(correlation);
        this.pending.delete(correlation);
        if (p && isDecision(d) && d.fallback) {
          // Answered before its decision arrived: a late reply is still matched to its trace (bounded).
          this.answered.set(correlation, { resolve: () => undefined, trace: p.trace });
          if (this.answered.size > MAX_ANSWERED) this.answered.delete(this.answered.keys().next().value as string);
        }
        resolve(d);
      };
      const timer = setTimeout(() => {
        const why = sent ? `no decision within ${timeoutMs} ms` : `not connected/published within ${timeoutMs} ms`;
        this.opts.logger?.warn({ trace_id: trace.trace_id, timeout_ms: timeoutMs }, `${why}, applying governance fallback`);
        finish(this.fallback(trace, timeoutMs));
      }, timeoutMs);
      this.pending.set(correlation, { resolve: finish, gate, trace });
      this.send(trace, correlation).then(
        () => {
          sent = true;
        },
        (e: unknown) => {
          const msg = e instanceof Error ? e.message : String(e);
          // A trace the broker refuses as too large, or that cannot be encoded, would be rejected by the stage
          // (fail closed): only an unreachable Kafka is the governance contract's case.
          const refused = isMessageTooLarge(e) ? 'STEWARD_TRACE_TOO_LARGE' : (e as { code?: string }).code === 'STEWARD_TRACE_SCHEMA' ? 'STEWARD_TRACE_SCHEMA' : undefined;
          if (refused) {
            this.opts.logger?.warn({ err: e, trace_id: trace.trace_id, code: refused }, 'trace refused before reaching the stage: blocked');
            finish(this.rejectedDecision(trace, refused, msg));
            return;
          }
          this.opts.logger?.warn({ err: e, trace_id: trace.trace_id }, done ? 'publish failed after the governance fallback was returned' : 'connect or publish failed, applying governance fallback');
          finish(this.fallback(trace, timeoutMs, `publish failed: ${msg}`));
        },
      );
    });
  }

  /**
   * Publishes a `final_answer` trace and waits for the finalization gate (docs/gate.md): the verdict, the action
   * (finalize, rewrite, replan, ask_user, finalize_with_limitations, block) and the repair directive. Never
   * rejects: a refused trace gets a fail-closed `block` with `rejected`; no answer within `timeoutMs` (default
   * `finalizeTimeoutMs`, 25 s: above a slow judge's worst case) — or no Kafka — gets a fail-closed `block` with
   * `fallback: true`, whatever the contract's fallback_on_timeout: nothing checked the draft (spec-decisions D40).
   */
  async finalize(trace: Trace, opts: { timeoutMs?: number } = {}): Promise<ClientGateAnswer> {
    const t: Trace = trace.hook === 'final_answer' ? trace : { ...trace, hook: 'final_answer' };
    const r = await this.request(t, `${this.instanceId}:${++this.seq}.${randomBytes(8).toString('hex')}`, opts.timeoutMs, true);
    return isDecision(r) ? gateAnswerOf(r, t) : r;
  }

  /**
   * Fire-and-forget: the decision still goes to acgp.decisions; the verdict reaches onVerdict handlers.
   * Unlike decide(), rejects when the client cannot connect or the send fails (there is no fallback to return).
   */
  async publish(trace: Trace): Promise<void> {
    await this.send(trace, `${this.instanceId}:p${++this.seq}`);
  }

  /** Receives verdicts of traces this instance published (decide or publish). Returns an unsubscribe. */
  onVerdict(handler: (v: VerdictMessage) => void | Promise<void>): () => void {
    this.verdictHandlers.push(handler);
    return () => {
      const i = this.verdictHandlers.indexOf(handler);
      if (i >= 0) this.verdictHandlers.splice(i, 1);
    };
  }

  /** The fail-closed answer to a trace that never reached the stage, shaped like the stage's own rejection. */
  private rejectedDecision(trace: Trace, code: string, message: string): ClientDecision {
    const ts = parseTimestamp(trace.timestamp);
    return rejectedDecision(trace, { code, message }, { event_time_ms: Number.isFinite(ts) ? ts : Date.now(), decided_at_ms: Date.now() }, 'before reaching the tripwire stage');
  }

  /** spec-decisions D5: the governance contract's fallback_on_timeout, default by tier. */
  fallback(trace: Trace, timeoutMs: number, why?: string): DecisionMessage {
    const policy = this.opts.fallbackOnTimeout ?? (TIER_RANK[this.opts.tier ?? 'ACL-2'] >= 4 ? 'escalate' : 'allow_and_log');
    let intervention: Intervention;
    let reason: string;
    const cached = this.lastDecision.get(cacheKey(trace.agent_id, trace.tool));
    if (policy === 'cached_decision' && cached) {
      intervention = cached.intervention;
      reason = `cached decision of trace ${cached.trace_id}`;
    } else {
      intervention = policy === 'deny' ? 'block' : policy === 'escalate' ? 'escalate' : 'flag';
      reason = `governance fallback ${policy === 'cached_decision' ? 'allow_and_log (no cached decision)' : policy}`;
    }
    const ts = parseTimestamp(trace.timestamp);
    return {
      trace_id: trace.trace_id,
      agent_id: trace.agent_id,
      tenant: cached?.tenant ?? '',
      blueprint: cached?.blueprint ?? '',
      intervention,
      approved: isApproved(intervention),
      stage: 'none',
      halted: false,
      reasons: [why ?? `no decision within ${timeoutMs} ms: ${reason}`],
      tripwires: [],
      rules: [],
      latency_ms: timeoutMs,
      event_time_ms: Number.isFinite(ts) ? ts : Date.now(),
      decided_at_ms: Date.now(),
      hook: trace.hook,
      tool: trace.tool,
      fallback: true,
      fallback_reason: why ?? 'timeout',
    };
  }

  /**
   * After a decision `escalate` with `approval_id` (docs/approvals.md): the approval's one outcome (approved,
   * denied or timed out with the tool's default action), or undefined after `timeoutMs`.
   */
  waitForApproval(approvalId: string, opts: ApprovalWaitOptions): Promise<ApprovalOutcome | undefined> {
    return waitForApprovalOutcome(this.adapter, this.topics.approvals, approvalId, opts);
  }

  async close(): Promise<void> {
    // Callers still waiting get the fallback now rather than after their timeout.
    for (const p of [...this.pending.values()]) p.resolve(this.fallback(p.trace, 0, 'client closed'));
    this.pending.clear();
    if (!this.connected) return;
    await this.connected.catch(() => undefined);
    await this.replies?.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
  }
}

const MAX_TIMER_MS = 2_147_483_647;
const MAX_CACHED_DECISIONS = 10_000;
const MAX_ANSWERED = 10_000;

function cacheKey(agent: string, tool: unknown): string {
  return `${agent}\u0000${typeof tool === 'string' ? tool : ''}`;
}
