/**
 * Tripwire stage (eval tier 0–1): acgp.traces → decide → acgp.decisions (key agent_id), the waiting
 * client's reply partition, and acgp.scoring unless the tripwires halted (docs/architecture.md, stages).
 * `final_answer` and `user_feedback` traces go to acgp.finalize instead: the gate stage answers them. All outputs of a
 * chunk leave in one idempotent send; the reply is listed first so it is not queued behind the rest.
 *
 * Every output is checked against `maxMessageBytes` before it is sent: an input whose decision, scoring
 * message or reply would not fit is dead-lettered (STEWARD_TRACE_TOO_LARGE) instead of failing the send
 * forever. A dead-lettered input that carries a valid reply route is answered with a fail-closed decision
 * (block, approved false, stage none, `rejected: {code, message}`), so a waiting client learns at once
 * that its trace was refused instead of timing out into its governance fallback.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { TraceDecoder } from '../adapters/kafka/serde.js';
import { replyRoute, replyMessage, REPLY_HEADERS, type ReplyTarget } from '../adapters/kafka/request-reply.js';
import { headerText } from '../adapters/kafka/client.js';
import { StewardError, isRetryable } from '../errors.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { StageOutput, StageProcessor } from './stage-runner.js';
import { eventTimeMs, fitsIn, messageBytes } from './stage-runner.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../config/steward-config.js';
import { rejectedDecision, type DecisionMessage } from '../contracts/messages.js';
import { decisionMessage } from '../contracts/engine-records.js';
import { approvalRequestJson } from '../contracts/approvals.js';
import { anchoredApproval } from '../engine/approvals/policy.js';
import type { DecideScoreEngine } from './stage-types.js';
import type { DecisionRecord } from '../engine/steward-engine.js';
import { scoringJson } from './scoring-message.js';
import { traceEventId } from '../engine/event-id.js';
import { checkGateHookInput } from '../engine/gate/final-answer-input.js';
import type { Trace } from '../engine/types.js';
import { finalizeJson, GATE_HOOKS } from './finalize-message.js';
import { tracePositionHeaders } from '../adapters/kafka/trace-position.js';
import { pendingRequest, responseChecks, type PendingRunEvent } from '../engine/acm/bundle/stream-record.js';
import type { IngestMarks, IngestRecord } from '../adapters/redis/ingest-marks.js';
import { INGEST_KEY_HEADER } from '../adapters/kafka/headers.js';

export interface TripwireStageDeps {
  engine: Pick<DecideScoreEngine, 'decide'>;
  decoder: TraceDecoder;
  topics: TopicNames;
  metrics: StewardMetrics;
  engineVersion?: string;
  nowMs?: () => number;
  /** limits.max_event_time_skew_ms (null: trust trace timestamps). */
  maxEventTimeSkewMs?: number | null;
  /** The only topic/partitions replies may go to (headers asking for anything else are ignored). */
  replies: ReplyTarget;
  /** Told when a trace asked for a reply route outside `replies` (logged by the runtime). */
  onRejectedRoute?: (m: InMessage) => void;
  /** limits.max_message_bytes: the largest output record (key + value + headers); default 1 000 000. */
  maxMessageBytes?: number;
  /** Binds the trace's agent_id to the record (key, registry, signature: docs/security.md); throws to dead-letter. */
  identity?: (trace: Trace, m: InMessage) => void;
  /** docs/rollout.md: RolloutStageHook.afterDecision (never throws; its outputs join the chunk's send). */
  afterDecision?: (trace: Trace, record: DecisionRecord, eventTimeMs: number) => Promise<StageOutput[]>;
  /** consumer.scorer_input: 'join' writes no acgp.scoring record (the scorer reads the trace itself, docs/pipeline.md "Hot path"). */
  scorerInput?: 'scoring' | 'join';
  /** topics.avro_outputs has `decisions`: the acgp.decisions value in Avro (output-avro.ts, schema id from start-up); absent: JSON. The reply stays JSON. */
  encodeDecision?: (d: DecisionMessage) => Buffer;
  /**
   * http.idempotency.dedupe 'pipeline' (docs/spec-decisions.md D52): a record with an INGEST_KEY_HEADER whose key its
   * agent already sent in an earlier record is dropped (no decision, no output). Absent: every record is decided.
   */
  ingestMarks?: IngestMarks;
  /**
   * Whether a record keyed by this agent may name an ingest key (default: every agent). A record's mark is written
   * before the identity check, which runs per record in process(): the keys of an agent that must sign (or of any
   * agent, when the record key is not bound to the trace) would otherwise be markable by whoever can write the topic.
   */
  ingestKeyAgent?: (agentId: string) => boolean;
  /** Told when the marks cannot be asked (Redis unreachable): the chunk is decided whole, copies included. */
  onMarksUnavailable?: (e: unknown) => void;
}

const MAX_ID_LENGTH = 256;
/** Identifying fields are read back from a rejected JSON trace only up to this size (best effort). */
const MAX_PEEK_BYTES = 64 * 1024;

function peekIds(value: Buffer | null): { trace_id?: string; hook?: string; tool?: string } {
  if (!value || value.length > MAX_PEEK_BYTES || value[0] !== 0x7b) return {};
  try {
    const o = JSON.parse(value.toString('utf8')) as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === 'string' && v.length <= MAX_ID_LENGTH ? v : undefined);
    return { trace_id: str(o.trace_id), hook: str(o.hook), tool: str(o.tool) };
  } catch {
    return {};
  }
}

export class TripwireProcessor implements StageProcessor {
  readonly stage = 'tripwire';
  readonly inputTopics: string[];

  /** Only with ingest marks: the chunk's copies of an already sent idempotency key, answered [] (StageProcessor). */
  readonly processChunk?: (chunk: InMessage[]) => Promise<(StageOutput[] | undefined)[]>;

  constructor(private readonly d: TripwireStageDeps) {
    this.inputTopics = [d.topics.traces];
    const marks = d.ingestMarks;
    if (marks) this.processChunk = (chunk) => this.dropCopies(marks, chunk);
  }

  /** The chunk's records with an ingest key asked in one round; a copy gets [] (done, nothing out), the rest undefined (decided by process()). */
  private async dropCopies(marks: IngestMarks, chunk: InMessage[]): Promise<(StageOutput[] | undefined)[]> {
    const out = new Array<StageOutput[] | undefined>(chunk.length);
    const at: number[] = [];
    const recs: IngestRecord[] = [];
    for (let i = 0; i < chunk.length; i++) {
      const m = chunk[i];
      const key = m.key === null ? undefined : headerText(m, INGEST_KEY_HEADER);
      if (key === undefined || key === '') continue;
      const agentId = m.key!.toString('utf8');
      if (this.d.ingestKeyAgent && !this.d.ingestKeyAgent(agentId)) continue;
      at.push(i);
      recs.push({ agentId, key, topic: m.topic, partition: m.partition, offset: m.offset });
    }
    if (recs.length === 0) return out;
    let firsts: boolean[];
    try {
      firsts = await marks.firsts(recs);
    } catch (e) {
      this.d.onMarksUnavailable?.(e);
      return out;
    }
    let copies = 0;
    for (let j = 0; j < at.length; j++) {
      if (firsts[j]) continue;
      out[at[j]] = [];
      copies++;
    }
    if (copies > 0) this.d.metrics.duplicates.inc({ stage: this.stage }, copies);
    return out;
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const { trace, json: traceJson, timestampMs } = await this.d.decoder.decode(m.value);
    this.d.identity?.(trace, m);
    const limit = this.d.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    // The scoring message carries the trace: one that alone exceeds the limit is refused before deciding (no state touched).
    if (!fitsIn({ key: m.key, value: traceJson ?? m.value }, limit)) {
      const traceBytes = traceJson !== undefined ? Buffer.byteLength(traceJson) : (m.value?.length ?? 0);
      throw new StewardError('STEWARD_TRACE_TOO_LARGE', `its outputs would exceed limits.max_message_bytes ${limit} (trace ${traceBytes} bytes as JSON)`);
    }
    const evTime = eventTimeMs(timestampMs, m, this.d.maxEventTimeSkewMs ?? null);
    if (GATE_HOOKS.has(trace.hook)) return this.toGate(m, trace, traceJson, evTime, limit);
    let record: DecisionRecord;
    try {
      record = await this.d.engine.decide(trace, evTime, traceEventId(trace.trace_id, m.value));
    } catch (e) {
      if (isRetryable(e)) throw e;
      throw e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', `decide failed: ${(e as Error).message}`, { cause: e });
    }
    // docs/approvals.md: an approval's deadline counts from the broker's time of the trace (acgp.traces is
    // LogAppendTime), not from the timestamp the agent wrote (spec-decisions D35).
    if (record.approval) record = { ...record, approval: anchoredApproval(record.approval, m.timestampMs) };
    const decision = decisionMessage(record, trace, evTime, (this.d.nowMs ?? Date.now)(), this.d.engineVersion);
    const encode = this.d.encodeDecision;
    // JSON for the reply (clients read JSON) and for acgp.decisions unless that topic is Avro.
    const json = encode ? undefined : JSON.stringify(decision);
    const outs: StageOutput[] = [];
    const route = replyRoute(m, this.d.replies);
    if (!route && headerText(m, REPLY_HEADERS.topic) !== undefined) this.d.onRejectedRoute?.(m);
    if (route) outs.push(replyMessage(route, 'decision', trace.agent_id, json ?? JSON.stringify(decision)));
    // Where the trace is, for the scorer's join (contracts C10); written in both modes, so a switch to the join finds them.
    outs.push({ topic: this.d.topics.decisions, message: { key: trace.agent_id, value: encode ? encode(decision) : json!, headers: tracePositionHeaders(m) } });
    // An event of an ACM run (docs/acm.md "In the stream"): its POLICY_DECISION (with the run) and ACM entries go
    // to the agent's chain here, ahead of the plain POLICY_DECISION the sink derives from the decision, which the
    // ledger then skips (same entry id pd:<event id>, same partition: one POLICY_DECISION per event). The run's
    // own chain (acm_ledger) is the sink's join of this stage's pending record and the scorer's answer.
    const acm = record.acm;
    if (acm) for (const d of acm.drafts) outs.push({ topic: this.d.topics.ledger, message: { key: d.agent_id, value: JSON.stringify(d) } });
    const runEvent = acm?.record !== undefined && acm.run_id !== undefined;
    if (runEvent) outs.push({ topic: this.d.topics.ledger, message: { key: trace.agent_id, value: JSON.stringify(this.pendingRecord(trace, traceJson ?? JSON.stringify(trace), record, acm.run_id!)) } });
    // docs/approvals.md: a call that waits for a human approval; keyed by approval id, like its answers and outcome.
    if (record.approval) outs.push({ topic: this.d.topics.approvals, message: { key: record.approval.approval_id, value: approvalRequestJson(record.approval) } });
    // A halted event of a run goes to the scorer too, for its answer record only (no verdict: a halt is final): the
    // scorer answers one agent's events in order, so the sink chains them in event order (docs/acm.md "In the stream").
    if ((!decision.halted || runEvent) && this.d.scorerInput !== 'join') outs.push({ topic: this.d.topics.scoring, message: { key: trace.agent_id, value: scoringJson(traceJson ?? JSON.stringify(trace), evTime, acm ? { ...record, acm: undefined } : record, route) } });
    for (const o of outs) {
      if (!fitsIn(o.message, limit)) {
        throw new StewardError('STEWARD_TRACE_TOO_LARGE', `its ${o.topic} message would be ${messageBytes(o.message)} bytes, over limits.max_message_bytes ${limit} (trace ${m.value?.length ?? 0} bytes)`);
      }
    }
    // Rollout arm counts and shadow evaluation (docs/rollout.md): after the decision, never changing it.
    if (this.d.afterDecision) outs.push(...(await this.d.afterDecision(trace, record, evTime)));
    this.d.metrics.interventions.inc({ stage: this.stage, intervention: decision.intervention });
    return outs;
  }

  /**
   * The run event's pending replay record (stream-record.ts): the trace as received, the request without the
   * scorers' answers, the blueprint's checks, the ACM part and entries. The scorer's answer completes it in the sink.
   */
  private pendingRecord(trace: Trace, line: string, record: DecisionRecord, runId: string): PendingRunEvent {
    const acm = record.acm!;
    const rec = acm.record!;
    const eventId = record.eventId ?? trace.trace_id;
    const task = (trace.task as { id?: unknown } | undefined)?.id;
    return {
      run_record: 'pending',
      tenant: record.tenant,
      run_id: runId,
      agent_id: trace.agent_id,
      trace_id: trace.trace_id,
      event_id: eventId,
      seq: rec.seq,
      now_ms: record.nowMs,
      line,
      request: pendingRequest({ seq: rec.seq, trace, traceLine: rec.seq, line, nowMs: record.nowMs, eventId, decision: record, reads: acm.reads ?? [] }),
      checks: responseChecks(record),
      ...(rec.acm ? { acm: rec.acm } : {}),
      contexts: rec.contexts,
      drafts: acm.drafts.slice(1),
      ...(this.d.engineVersion ? { engine_version: this.d.engineVersion } : {}),
      ...(typeof task === 'string' ? { task_id: task } : {}),
    };
  }

  /**
   * A `final_answer` or `user_feedback` is the gate stage's to answer (docs/gate.md): checked here (a final
   * answer without job_id or draft is dead-lettered with the reason) and passed on through acgp.finalize,
   * behind the job's tool calls this stage already recorded, with the waiting client's reply route.
   */
  private toGate(m: InMessage, trace: Trace, traceJson: string | undefined, evTime: number, limit: number): StageOutput[] {
    checkGateHookInput(trace);
    const route = replyRoute(m, this.d.replies);
    const out: StageOutput = { topic: this.d.topics.finalize, message: { key: trace.agent_id, value: finalizeJson(traceJson ?? JSON.stringify(trace), evTime, traceEventId(trace.trace_id, m.value), route) } };
    if (!fitsIn(out.message, limit)) throw new StewardError('STEWARD_TRACE_TOO_LARGE', `its ${out.topic} message would be ${messageBytes(out.message)} bytes, over limits.max_message_bytes ${limit}`);
    return [out];
  }

  /** A dead-lettered input with a valid reply route: answer the waiting client with a fail-closed decision. */
  onDeadLetter(m: InMessage, err: { code: string; message: string }): StageOutput[] {
    const route = replyRoute(m, this.d.replies);
    if (!route) return [];
    const key = m.key && m.key.length <= MAX_ID_LENGTH ? m.key.toString('utf8') : '';
    const ids = peekIds(m.value);
    const now = (this.d.nowMs ?? Date.now)();
    const d = rejectedDecision({ trace_id: ids.trace_id ?? '', agent_id: key, hook: ids.hook ?? '', tool: ids.tool }, err, { event_time_ms: Number.isFinite(m.timestampMs) ? m.timestampMs : now, decided_at_ms: now }, 'by the tripwire stage');
    if (this.d.engineVersion) d.engine_version = this.d.engineVersion;
    return [replyMessage(route, 'decision', key, JSON.stringify(d))];
  }
}
