/**
 * Scorer stage (eval tier 2): acgp.scoring → StewardEngine.score → acgp.verdicts (key agent_id), and the
 * verdict to the originating client's reply partition when it asked for replies.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import { replyMessage } from '../adapters/kafka/request-reply.js';
import { StewardError, isRetryable } from '../errors.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { StageOutput, StageProcessor } from './stage-runner.js';
import { verdictMessage } from '../contracts/engine-records.js';
import type { DecideScoreEngine } from './stage-types.js';
import type { ScoreDecisionInput, ScoreRecord } from '../engine/steward-engine.js';
import type { Trace } from '../engine/types.js';
import type { DecisionMessage, ReplyRoute, VerdictMessage } from '../contracts/messages.js';
import { parseScoring } from './scoring-message.js';
import { runEventAnswer } from '../engine/acm/bundle/stream-record.js';
import { runIdOf } from '../engine/acm/run-state.js';
import type { ScoredMarks, ScoringTurn } from '../adapters/redis/scored-marks.js';

export interface ScorerStageDeps {
  engine: Pick<DecideScoreEngine, 'score'>;
  topics: TopicNames;
  metrics: StewardMetrics;
  nowMs?: () => number;
  /** Skips a scoring record the tripwire stage wrote again for a trace already scored (absent: scores every record). */
  marks?: ScoredMarks;
  /** Told when the marks cannot be read (Redis down): the record is scored anyway. */
  onMarksUnavailable?: (e: unknown) => void;
  /** docs/rollout.md: the review queue (ReviewQueueHook.afterVerdict); its outputs join the verdict's send. */
  afterVerdict?: (record: ScoreRecord, d: { blueprintVersion?: string; rolloutArm?: string; eventTimeMs: number }) => Promise<StageOutput[]>;
  /**
   * ACM run governance is on (acm.yaml next to the blueprints, as the tripwire stage reads it): a scored event of a
   * run also gets its answer record on acgp.ledger, which the sink joins with the tripwire stage's pending record
   * (docs/acm.md "In the stream").
   */
  runRecords?: boolean;
  /** topics.avro_outputs has `verdicts`: the acgp.verdicts value in Avro (output-avro.ts, schema id from start-up); absent: JSON. The reply stays JSON. */
  encodeVerdict?: (v: VerdictMessage) => Buffer;
}

export class ScorerProcessor implements StageProcessor {
  readonly stage = 'scorer';
  readonly inputTopics: string[];

  constructor(private readonly d: ScorerStageDeps) {
    this.inputTopics = [d.topics.scoring];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const s = parseScoring(m, this.d.topics.replies);
    return scoreOne(this.d, this.stage, m, s.trace, s.decision, s.decisionForScore, s.decision.event_time_ms, s.reply);
  }
}

/**
 * Scores one trace and returns its verdict (acgp.verdicts) and the client's verdict reply; `m` is the record the
 * scored mark names (the scoring record, or the decision record of the join). Shared by both scorer inputs.
 */
export async function scoreOne(
  d: ScorerStageDeps,
  stage: string,
  m: InMessage,
  trace: Trace,
  decision: DecisionMessage,
  forScore: ScoreDecisionInput,
  eventTimeMs: number,
  reply: ReplyRoute | undefined,
): Promise<StageOutput[]> {
  // A halted event of a run comes here for its replay answer only (docs/acm.md "In the stream"): a halt is final, no verdict.
  const answerOnly = decision.halted === true;
  const runId = d.runRecords ? runIdOf(trace) : undefined;
  if (answerOnly && runId === undefined) return [];
  const eventId = decision.event_id;
  const turn = d.marks && eventId ? await markTurn(d, eventId, m, reply?.correlation_id) : 'first';
  if (turn === 'duplicate') {
    d.metrics.duplicates.inc({ stage });
    return [];
  }
  let record: ScoreRecord;
  try {
    record = await d.engine.score(trace, forScore, eventTimeMs);
  } catch (e) {
    if (isRetryable(e)) throw e;
    throw e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', `score failed: ${(e as Error).message}`, { cause: e });
  }
  // Same topic and key as the pending record the tripwire stage wrote before this trace could be scored: the sink
  // joins the two. Only the first scoring answers (a reply-only turn was answered already).
  const answer: StageOutput[] =
    runId !== undefined && turn === 'first'
      ? [{ topic: d.topics.ledger, message: { key: trace.agent_id, value: JSON.stringify(runEventAnswer({ tenant: record.tenant, run_id: runId, agent_id: trace.agent_id, trace_id: trace.trace_id, event_id: eventId ?? trace.trace_id }, record)) } }]
      : [];
  if (answerOnly) return answer;
  const verdict = verdictMessage(record, decision, (d.nowMs ?? Date.now)());
  if (turn !== 'reply-only') d.metrics.interventions.inc({ stage, intervention: verdict.intervention });
  // JSON for the reply (clients read JSON) and for acgp.verdicts unless that topic is Avro.
  const json = d.encodeVerdict && !reply ? undefined : JSON.stringify(verdict);
  const outs: StageOutput[] = turn === 'reply-only' ? [] : [{ topic: d.topics.verdicts, message: { key: trace.agent_id, value: d.encodeVerdict ? d.encodeVerdict(verdict) : json! } }];
  if (reply) outs.push(replyMessage(reply, 'verdict', trace.agent_id, json!));
  outs.push(...answer);
  if (d.afterVerdict && turn !== 'reply-only') outs.push(...(await d.afterVerdict(record, { blueprintVersion: decision.blueprint_version, rolloutArm: decision.rollout_arm, eventTimeMs })));
  if (turn === 'reply-only') d.metrics.duplicates.inc({ stage });
  return outs;
}

/**
 * Fails open: the marks only catch the tripwire stage's second record of a trace (the scorer's own redeliveries
 * are covered by its transactions), which does not justify stopping scoring during a Redis outage.
 */
async function markTurn(d: ScorerStageDeps, eventId: string, m: InMessage, correlationId: string | undefined): Promise<ScoringTurn> {
  try {
    return await d.marks!.turn(eventId, m, correlationId);
  } catch (e) {
    d.onMarksUnavailable?.(e);
    return 'first';
  }
}
