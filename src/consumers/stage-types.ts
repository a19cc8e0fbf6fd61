/**
 * The contract between the shared stage loop (stage-runner.ts) and the stages: what a processor does with
 * one input, what it returns, and how the runner is set up.
 */
import type { KafkaAdapter, InMessage, OutMessage, StewardProducer } from '../adapters/kafka/client.js';
import type { PartitionTransactions } from '../adapters/kafka/partition-transactions.js';
import type { Logger } from '../logger.js';
import type { DecisionRecord, ScoreDecisionInput, ScoreRecord } from '../engine/steward-engine.js';
import type { Trace } from '../engine/types.js';
import type { FinalizationOutcomeEvent, GateOutcome } from '../engine/gate/types.js';
import type { DecideChunkOptions, GateChunkResult } from '../engine/gate/chunk.js';
import type { StewardMetrics } from '../observability/metrics.js';

/** What the tripwire and scorer stages need of StewardEngine (src/engine/steward-engine.ts). */
export interface DecideScoreEngine {
  decide(trace: Trace, nowMs: number, eventId?: string): Promise<DecisionRecord>;
  score(trace: Trace, decision: ScoreDecisionInput, nowMs: number): Promise<ScoreRecord>;
}

/** What the gate stage needs of StewardEngine: the finalization gate over the selected blueprint. */
export interface FinalizeEngine {
  finalize(trace: Trace, nowMs: number, eventId: string): Promise<GateOutcome>;
  userFeedback(trace: Trace, nowMs: number): Promise<FinalizationOutcomeEvent | null>;
  /** A chunk in job-state rounds (StewardEngine.finalizeChunk); without it the stage decides input by input. */
  finalizeChunk?<T = GateChunkResult>(items: readonly { trace: Trace; nowMs: number; eventId: string }[], opts?: DecideChunkOptions<T>): Promise<T[]>;
}

export interface StageOutput {
  topic: string;
  message: OutMessage;
  /** With transactions: sent outside the transaction, after it committed (replies to waiting clients). */
  afterCommit?: boolean;
}

export interface StageProcessor {
  readonly stage: string;
  readonly inputTopics: string[];
  /** Returns the outputs for one input. Throws StewardError: non-retryable → DLQ, retryable → retried. */
  process(m: InMessage): Promise<StageOutput[]>;
  /**
   * Optional: a whole chunk at once (the gate stage: its Redis state in one round per chunk). Per input its
   * outputs, or undefined: the runner then processes that input with process(), after the chunk, in offset order
   * per key. Should not throw (a throw leaves the whole chunk to process()). `shouldStop` turns true on a
   * rebalance or a shutdown: check it between units of work and leave the rest undefined (the runner then marks
   * them stopped, to be redone by the next owner), so a long chunk does not outlive the group's rebalance timeout.
   * `sendNow(at, outs)`: outputs of input `at` that leave at once instead of with the chunk's produce (the gate's
   * reply as soon as its answer is recorded: a chunk can take longer than a client waits); not returned again in
   * the input's outputs. Only for outputs a redone input repeats as they are (a redelivered answer gets its stored
   * outcome), since they may leave before the chunk's offsets are committed or even processed to the end; one the
   * runner fails to send goes out with the chunk's produce instead.
   */
  processChunk?(chunk: InMessage[], shouldStop?: () => boolean, sendNow?: (at: number, outs: StageOutput[]) => void): Promise<(StageOutput[] | undefined)[]>;
  /**
   * Extra outputs sent with an input's DLQ record (the tripwire stage answers a waiting client with a
   * fail-closed decision). Must not throw; outputs over `maxMessageBytes` are dropped.
   */
  onDeadLetter?(m: InMessage, err: { code: string; message: string }): StageOutput[];
}

export interface StageRunnerOptions {
  adapter: KafkaAdapter;
  /** The idempotent producer of the outputs; with `transactions`, of the `afterCommit` ones only. */
  producer: StewardProducer;
  groupId: string;
  dlqTopic: string;
  metrics: StewardMetrics;
  logger: Logger;
  chunkSize?: number;
  /** Distinct keys (agents) processed concurrently inside one partition's chunk. */
  keyConcurrency?: number;
  partitionsConcurrently?: number;
  autoCommitIntervalMs?: number;
  sessionTimeoutMs?: number;
  retry?: { initialMs: number; maxMs: number };
  /**
   * Error codes whose retries are bounded (spec-decisions D32): a retryable error with one of these codes is
   * retried while the input's first failure is less than this many ms ago, then the input is dead-lettered with
   * the error's code. For causes that rarely pass by themselves (Redis out of memory): the partition moves on and
   * the refused inputs are visible in the DLQ instead of hiding behind consumer lag. Other codes: no bound.
   */
  retryLimitsMs?: Readonly<Record<string, number>>;
  /** Wall clock for DLQ timestamps (injectable for tests). */
  nowMs?: () => number;
  /** limits.max_message_bytes: DLQ records are cut to fit (default 1 000 000). */
  maxMessageBytes?: number;
  /** Wait before replacing a consumer that crashed for good (default 2000 ms). */
  restartDelayMs?: number;
  /**
   * How often the lag of partitions no chunk has reported on lately is read from the broker (committed offset
   * against the high watermark; default 15 000 ms): a stalled partition's lag must grow, not freeze.
   */
  lagRefreshMs?: number;
  /**
   * A consumer that never joined its group crashed for good on a non-retriable error (the broker refuses the
   * configuration or the credentials: a session timeout outside its range, no access to the group): restarting
   * would fail the same way every few seconds, so the stage is reported instead. Absent: restarted like any crash.
   */
  onFatal?: (err: Error) => void;
  /**
   * Exactly-once output (consumer.exactly_once): each chunk's outputs and offset commit in one transaction per
   * input partition instead of an idempotent send plus kafkajs' offset commits; `producer` sends the replies
   * (`afterCommit`) once the transaction committed.
   */
  transactions?: PartitionTransactions;
}
