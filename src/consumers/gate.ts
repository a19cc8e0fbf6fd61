/**
 * Gate stage: acgp.finalize → the finalization gate (docs/gate.md) → the waiting agent's reply (kind `gate`:
 * verdict, action, directive), the §9.13 events on acgp.gate (the judge result carries the trust-debt
 * movement the trust-debt stage applies; the outcome when the job ends) and a REPLAN_TRIGGERED draft on
 * acgp.ledger for each repair directive. A `user_feedback` trace re-publishes the job's outcome with it.
 *
 * A redelivered final answer gets the stored outcome of its first decision (the job state counts attempts
 * per event id), so its outputs are the same records again: the sink and the trust-debt stage dedupe them.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import { replyMessage, type ReplyTarget } from '../adapters/kafka/request-reply.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { GateEventMessage, GateReplyMessage } from '../contracts/messages.js';
import { gateAnswerFields } from '../contracts/engine-records.js';
import type { GateOutcome } from '../engine/gate/types.js';
import { StewardError, isRetryable } from '../errors.js';
import type { StewardMetrics } from '../observability/metrics.js';
import { parseFinalize } from './finalize-message.js';
import { fitsIn, messageBytes } from './stage-io.js';
import type { FinalizeEngine, StageOutput, StageProcessor } from './stage-types.js';

export interface GateStageDeps {
  engine: FinalizeEngine;
  topics: TopicNames;
  metrics: StewardMetrics;
  /** The only topic/partitions replies may go to. */
  replies: ReplyTarget;
  engineVersion?: string;
  nowMs?: () => number;
  /** limits.max_message_bytes. */
  maxMessageBytes: number;
  /** Told when a job's user_feedback found no ended job (expired or unknown): nothing to update. */
  onOrphanFeedback?: (jobId: unknown, agentId: string) => void;
}

/** The agent's answer: what to do next, without the analytics payload. */
export function gateReply(o: GateOutcome, eventTimeMs: number, decidedAtMs: number, engineVersion?: string): GateReplyMessage {
  return {
    trace_id: o.trace_id,
    agent_id: o.agent_id,
    job_id: o.job_id,
    approved: o.intervention === 'ok' || o.intervention === 'nudge' || o.intervention === 'flag',
    ...gateAnswerFields(o),
    event_time_ms: eventTimeMs,
    decided_at_ms: decidedAtMs,
    ...(engineVersion ? { engine_version: engineVersion } : {}),
  };
}

export class GateProcessor implements StageProcessor {
  readonly stage = 'gate';
  readonly inputTopics: string[];

  constructor(private readonly d: GateStageDeps) {
    this.inputTopics = [d.topics.finalize];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const req = parseFinalize(m, this.d.replies.topic);
    const { trace } = req;
    const t = this.d.topics;
    const key = trace.agent_id;
    if (trace.hook === 'user_feedback') {
      const ev = await this.call(() => this.d.engine.userFeedback(trace, req.event_time_ms));
      if (!ev) {
        this.d.onOrphanFeedback?.(trace.job_id, trace.agent_id);
        return [];
      }
      return [{ topic: t.gate, message: { key, value: JSON.stringify(ev satisfies GateEventMessage) } }];
    }
    const o = await this.call(() => this.d.engine.finalize(trace, req.event_time_ms, req.event_id));
    const outs: StageOutput[] = [];
    if (req.reply) outs.push(replyMessage(req.reply, 'gate', key, JSON.stringify(gateReply(o, req.event_time_ms, (this.d.nowMs ?? Date.now)(), this.d.engineVersion))));
    const judged: GateEventMessage = { ...o.events.final_alignment_judge_result, trust_debt: o.trust_debt };
    outs.push({ topic: t.gate, message: { key, value: JSON.stringify(judged) } });
    if (o.events.finalization_outcome) outs.push({ topic: t.gate, message: { key, value: JSON.stringify(o.events.finalization_outcome satisfies GateEventMessage) } });
    if (o.ledger) outs.push({ topic: t.ledger, message: { key, value: JSON.stringify(o.ledger) } });
    for (const x of outs) {
      if (!fitsIn(x.message, this.d.maxMessageBytes)) {
        throw new StewardError('STEWARD_TRACE_TOO_LARGE', `its ${x.topic} message would be ${messageBytes(x.message)} bytes, over limits.max_message_bytes ${this.d.maxMessageBytes}`);
      }
    }
    // A redelivered answer was counted when it was first decided.
    if (!o.redelivered) {
      this.d.metrics.gateJudged(o.events.final_alignment_judge_result);
      if (o.events.finalization_outcome) this.d.metrics.gateOutcome(o.events.finalization_outcome);
    }
    this.d.metrics.interventions.inc({ stage: this.stage, intervention: o.intervention });
    return outs;
  }

  /** Input errors (STEWARD_GATE_INPUT) are dead-lettered; an unavailable job store is retried. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isRetryable(e)) throw e;
      throw e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', `finalize failed: ${(e as Error).message}`, { cause: e });
    }
  }
}
