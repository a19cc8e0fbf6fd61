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
import type { ScoreRecord } from '../engine/steward-engine.js';
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
}

export class ScorerProcessor implements StageProcessor {
  readonly stage = 'scorer';
  readonly inputTopics: string[];

  constructor(private readonly d: ScorerStageDeps) {
    this.inputTopics = [d.topics.scoring];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const s = parseScoring(m, this.d.topics.replies);
    const eventId = s.decision.event_id;
    const turn = this.d.marks && eventId ? await this.turn(eventId, m, s.reply?.correlation_id) : 'first';
    if (turn === 'duplicate') {
      this.d.metrics.duplicates.inc({ stage: this.stage });
      return [];
    }
    let record: ScoreRecord;
    try {
      record = await this.d.engine.score(s.trace, s.decisionForScore, s.decision.event_time_ms);
    } catch (e) {
      if (isRetryable(e)) throw e;
      throw e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', `score failed: ${(e as Error).message}`, { cause: e });
    }
    const verdict = verdictMessage(record, s.decision, (this.d.nowMs ?? Date.now)());
    if (turn !== 'reply-only') this.d.metrics.interventions.inc({ stage: this.stage, intervention: verdict.intervention });
    const json = JSON.stringify(verdict);
    const outs: StageOutput[] = turn === 'reply-only' ? [] : [{ topic: this.d.topics.verdicts, message: { key: s.trace.agent_id, value: json } }];
    if (s.reply) outs.push(replyMessage(s.reply, 'verdict', s.trace.agent_id, json));
    if (turn === 'reply-only') this.d.metrics.duplicates.inc({ stage: this.stage });
    return outs;
  }

  /**
   * Fails open: the marks only catch the tripwire stage's second scoring record of a trace (the scorer's own
   * redeliveries are covered by its transactions), which does not justify stopping scoring during a Redis outage.
   */
  private async turn(eventId: string, m: InMessage, correlationId: string | undefined): Promise<ScoringTurn> {
    try {
      return await this.d.marks!.turn(eventId, m, correlationId);
    } catch (e) {
      this.d.onMarksUnavailable?.(e);
      return 'first';
    }
  }
}
