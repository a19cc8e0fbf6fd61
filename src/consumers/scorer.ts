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
import type { DecisionMessage, ReplyRoute } from '../contracts/messages.js';
import { parseScoring } from './scoring-message.js';
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
  const verdict = verdictMessage(record, decision, (d.nowMs ?? Date.now)());
  if (turn !== 'reply-only') d.metrics.interventions.inc({ stage, intervention: verdict.intervention });
  const json = JSON.stringify(verdict);
  const outs: StageOutput[] = turn === 'reply-only' ? [] : [{ topic: d.topics.verdicts, message: { key: trace.agent_id, value: json } }];
  if (reply) outs.push(replyMessage(reply, 'verdict', trace.agent_id, json));
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
