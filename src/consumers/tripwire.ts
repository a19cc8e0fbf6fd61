/**
 * Tripwire stage (eval tier 0–1): acgp.traces → decide → acgp.decisions (key agent_id), the waiting
 * client's reply partition, and acgp.scoring unless the tripwires halted (DESIGN §2). All outputs of a
 * chunk leave in one idempotent send; the reply is listed first so it is not queued behind the rest.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { TraceDecoder } from '../adapters/kafka/serde.js';
import { replyRoute, replyMessage, REPLY_HEADERS, type ReplyTarget } from '../adapters/kafka/request-reply.js';
import { headerText } from '../adapters/kafka/client.js';
import { StewardError, isRetryable } from '../errors.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { StageOutput, StageProcessor } from './common.js';
import { eventTimeMs } from './common.js';
import { decisionMessage, type DecideScoreEngine } from './common-engine.js';
import { scoringJson } from './scoring-message.js';
import { traceEventId } from '../engine/event-id.js';

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
}

export class TripwireProcessor implements StageProcessor {
  readonly stage = 'tripwire';
  readonly inputTopics: string[];

  constructor(private readonly d: TripwireStageDeps) {
    this.inputTopics = [d.topics.traces];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const { trace, json: traceJson } = await this.d.decoder.decode(m.value);
    const evTime = eventTimeMs(trace.timestamp, m, this.d.maxEventTimeSkewMs ?? null);
    let record: unknown;
    try {
      record = await this.d.engine.decide(trace, evTime, traceEventId(trace.trace_id, m.value));
    } catch (e) {
      if (isRetryable(e)) throw e;
      throw e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', `decide failed: ${(e as Error).message}`, { cause: e });
    }
    const decision = decisionMessage(record, trace, evTime, (this.d.nowMs ?? Date.now)(), this.d.engineVersion);
    this.d.metrics.interventions.inc({ stage: this.stage, intervention: decision.intervention });
    const json = JSON.stringify(decision);
    const outs: StageOutput[] = [];
    const route = replyRoute(m, this.d.replies);
    if (!route && headerText(m, REPLY_HEADERS.topic) !== undefined) this.d.onRejectedRoute?.(m);
    if (route) outs.push(replyMessage(route, 'decision', trace.agent_id, json));
    outs.push({ topic: this.d.topics.decisions, message: { key: trace.agent_id, value: json } });
    if (!decision.halted) outs.push({ topic: this.d.topics.scoring, message: { key: trace.agent_id, value: scoringJson(traceJson ?? JSON.stringify(trace), evTime, record, route) } });
    return outs;
  }
}
