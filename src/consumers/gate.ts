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
import type { FinalizeRequestMessage, GateEventMessage, GateReplyMessage } from '../contracts/messages.js';
import { gateAnswerFields } from '../contracts/engine-records.js';
import type { FinalizationOutcomeEvent, GateOutcome } from '../engine/gate/types.js';
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
  /** Answers of a chunk decided at once (processChunk; default: the judge's llm.max_in_flight). */
  chunkConcurrency?: number;
  /** Inputs per job-state round pair: a chunk is decided in slices of this many, one after another (default 64). */
  chunkSlice?: number;
  /** Told when a job's user_feedback found no ended job (expired or unknown): nothing to update. */
  onOrphanFeedback?: (jobId: unknown, agentId: string) => void;
}

/** The agent's answer: what to do next, without the analytics payload. */
export function gateReply(o: GateOutcome, eventTimeMs: number, decidedAtMs: number, engineVersion?: string): GateReplyMessage {
  return {
    trace_id: o.trace_id,
    agent_id: o.agent_id,
    job_id: o.job_id,
    // Deliver this answer: only a finalize ending does. PASS_WITH_CAVEATS maps to nudge while ordering a repair (§9.7).
    approved: o.action === 'finalize' || o.action === 'finalize_with_limitations',
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
    if (trace.hook === 'user_feedback') return this.feedbackOutputs(req, await this.call(() => this.d.engine.userFeedback(trace, req.event_time_ms)));
    return this.answerOutputs(req, await this.call(() => this.d.engine.finalize(trace, req.event_time_ms, req.event_id)));
  }

  /**
   * A chunk in job-state rounds (the engine's finalizeChunk; docs/pipeline.md "Gate stage"): per slice of the
   * chunk, one read round and one write round for its jobs instead of two rounds per answer. Slices run one after
   * another, in offset order: a slice's parsed traces and decisions are garbage before the next one starts (a whole
   * 500-input chunk at once kept them alive across scavenges: GC time per answer nearly doubled). Undefined for an
   * input not finished here (malformed, a failure, or after an unfinished input of its job): the runner gives it
   * to process() after the chunk, where it is retried or dead-lettered as ever, in offset order per key.
   * An answer's reply goes to `sendNow` as soon as the answer is recorded; its events stay with the chunk's produce.
   */
  async processChunk(chunk: InMessage[], shouldStop?: () => boolean, sendNow?: (at: number, outs: StageOutput[]) => void): Promise<(StageOutput[] | undefined)[]> {
    const out: (StageOutput[] | undefined)[] = new Array(chunk.length);
    const finalizeChunk = this.d.engine.finalizeChunk?.bind(this.d.engine);
    if (!finalizeChunk) return out;
    const slice = Math.max(1, this.d.chunkSlice ?? 64);
    // Jobs with an unfinished input: their later inputs are left to process() too, so a job's order holds.
    const blocked = new Set<string>();
    const jobOf = (req: FinalizeRequestMessage) => `${req.trace.agent_id}\u0000${String(req.trace.job_id)}`;
    for (let from = 0; from < chunk.length; from += slice) {
      // A rebalance or shutdown between slices: the rest is left undefined, the runner marks it stopped.
      if (shouldStop?.()) break;
      const reqs: { at: number; req: FinalizeRequestMessage }[] = [];
      for (let at = from; at < Math.min(chunk.length, from + slice); at++) {
        try {
          const req = parseFinalize(chunk[at]!, this.d.replies.topic);
          if (!blocked.has(jobOf(req))) reqs.push({ at, req });
        } catch {
          // dead-lettered by process()
        }
      }
      // Each answer becomes its records as soon as it is settled (map), so the expanded answers do not pile up.
      await finalizeChunk(
        reqs.map(({ req }) => ({ trace: req.trace, nowMs: req.event_time_ms, eventId: req.event_id })),
        {
          concurrency: this.d.chunkConcurrency,
          map: (r, k) => {
            const { at, req } = reqs[k]!;
            try {
              if ('outcome' in r) {
                const outs = this.answerOutputs(req, r.outcome);
                // The reply leaves now that the answer is recorded, not when the chunk's last judge call returns (a
                // chunk of answers takes waves of llm.max_in_flight judge calls; the client waits 25 s, D40). A redone
                // answer gets its stored outcome: the same reply again, which the client has taken already.
                if (sendNow && req.reply) {
                  sendNow(at, outs.filter((o) => o.afterCommit));
                  out[at] = outs.filter((o) => !o.afterCommit);
                } else out[at] = outs;
              } else if ('feedback' in r) out[at] = this.feedbackOutputs(req, r.feedback);
            } catch {
              // an output over the size limit: process() answers it again (a redelivery, same outputs) and dead-letters it
            }
            if (out[at] === undefined) blocked.add(jobOf(req));
          },
        },
      );
    }
    return out;
  }

  private feedbackOutputs(req: FinalizeRequestMessage, ev: FinalizationOutcomeEvent | null): StageOutput[] {
    const { trace } = req;
    if (!ev) {
      this.d.onOrphanFeedback?.(trace.job_id, trace.agent_id);
      return [];
    }
    return [{ topic: this.d.topics.gate, message: { key: trace.agent_id, value: JSON.stringify(ev satisfies GateEventMessage) } }];
  }

  private answerOutputs(req: FinalizeRequestMessage, o: GateOutcome): StageOutput[] {
    const t = this.d.topics;
    const key = req.trace.agent_id;
    const outs: StageOutput[] = [];
    if (req.reply) outs.push(replyMessage(req.reply, 'gate', key, JSON.stringify(gateReply(o, req.event_time_ms, (this.d.nowMs ?? Date.now)(), this.d.engineVersion))));
    // The trust-debt stage applies `trust_debt` under the answering blueprint's settings (spec-decisions D50).
    const judged: GateEventMessage = { ...o.events.final_alignment_judge_result, trust_debt: o.trust_debt, blueprint: o.blueprint };
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
      // A job that ended before counts once: its earlier ending is marked superseded (D45).
      if (o.events.finalization_outcome) this.d.metrics.gateOutcome(o.events.finalization_outcome, o.supersedes);
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
