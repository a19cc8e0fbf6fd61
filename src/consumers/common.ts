/**
 * The shared consume → process → produce loop of every stage.
 *
 * Delivery: each partition's batch is processed in chunks (per key in order, keys concurrently); a chunk's outputs (including
 * DLQ records) go out in one idempotent send, and only after the broker acknowledged them are the
 * chunk's offsets resolved (kafkajs commits resolved offsets on its interval, on rebalance and on stop).
 * The next chunk is processed while the previous one's send is being acknowledged; its own send waits
 * for that acknowledgement, so outputs keep offset order.
 * A crash therefore replays at most the unacknowledged tail: at-least-once, made idempotent downstream by
 * trace_id / event_id. Non-retryable errors dead-letter the message; retryable ones (Redis, registry
 * outages) are retried with backoff while the partition waits, so nothing is skipped.
 */
import type { KafkaAdapter, InMessage, OutMessage, StewardConsumer, StewardProducer, InBatch, BatchControl } from '../adapters/kafka/client.js';
import { dlqMessage } from '../adapters/kafka/dlq.js';
import { StewardError, isRetryable } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StewardMetrics } from '../observability/metrics.js';
import { parseTimestamp } from '../engine/time.js';

export interface StageOutput {
  topic: string;
  message: OutMessage;
}

export interface StageProcessor {
  readonly stage: string;
  readonly inputTopics: string[];
  /** Returns the outputs for one input. Throws StewardError: non-retryable → DLQ, retryable → retried. */
  process(m: InMessage): Promise<StageOutput[]>;
}

export interface StageRunnerOptions {
  adapter: KafkaAdapter;
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
  /** Wall clock for DLQ timestamps (injectable for tests). */
  nowMs?: () => number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class StageRunner {
  private consumer?: StewardConsumer;
  private running = false;
  private joined = false;
  private readonly chunkSize: number;
  private readonly keyConcurrency: number;

  constructor(
    private readonly proc: StageProcessor,
    private readonly opts: StageRunnerOptions,
  ) {
    this.chunkSize = opts.chunkSize ?? 500;
    this.keyConcurrency = opts.keyConcurrency ?? 32;
  }

  get stage(): string {
    return this.proc.stage;
  }

  /** True once the consumer joined its group (for /readyz). */
  isReady(): boolean {
    return this.running && this.joined;
  }

  async start(): Promise<void> {
    const c = this.opts.adapter.consumer({ groupId: this.opts.groupId, sessionTimeoutMs: this.opts.sessionTimeoutMs, maxWaitTimeMs: 100 });
    this.consumer = c;
    c.onGroupJoin(() => {
      this.joined = true;
    });
    c.onCrash((err, willRestart) => {
      this.opts.logger.error({ err, stage: this.stage, willRestart }, 'consumer crashed');
      if (!willRestart) this.joined = false;
    });
    await c.subscribe(this.proc.inputTopics, true);
    this.running = true;
    await c.runBatches((b, ctl) => this.onBatch(b, ctl), {
      partitionsConcurrently: this.opts.partitionsConcurrently ?? 4,
      autoCommitIntervalMs: this.opts.autoCommitIntervalMs ?? 1000,
    });
  }

  /** Graceful: stop fetching, let in-flight chunks finish and their offsets commit, then disconnect. */
  async stop(): Promise<void> {
    if (!this.consumer) return;
    this.running = false;
    await this.consumer.stop();
    await this.consumer.disconnect();
    this.consumer = undefined;
  }

  /**
   * Chunks of one partition in offset order. Chunk n+1 is processed while chunk n's outputs are being
   * acknowledged; chunk n+1's outputs are sent only after that acknowledgement and its offsets resolved
   * only after its own, so outputs leave in offset order and offsets never run ahead of acknowledged
   * outputs. A failed send throws here (the batch is redone from the last resolved offset).
   */
  private async onBatch(batch: InBatch, ctl: BatchControl): Promise<void> {
    const msgs = batch.messages;
    let acking: Promise<void> | undefined;
    const settle = async () => {
      const a = acking;
      acking = undefined;
      if (a) await a;
    };
    try {
      for (let i = 0; i < msgs.length; i += this.chunkSize) {
        if (!ctl.isRunning() || ctl.isStale()) break;
        const chunk = msgs.slice(i, i + this.chunkSize);
        const results = await this.processChunk(chunk, ctl);
        const stoppedAt = results.findIndex((r) => r === 'stopped');
        const done = stoppedAt < 0 ? results.length : stoppedAt;
        // Outputs in offset order; on a stop, only the prefix before the first unfinished message counts
        // (later ones are redone after the restart: at-least-once, idempotent downstream).
        const outs = results.slice(0, done).flatMap((r) => r as StageOutput[]);
        await settle();
        const last = done > 0 ? chunk[done - 1].offset : undefined;
        const sent = this.flush(outs).then(() => {
          if (last !== undefined) ctl.resolveOffset(last);
        });
        // Awaited before the next flush or on exit; the no-op handler only keeps a failure that happens
        // while the next chunk is processed from being reported as unhandled in between.
        sent.catch(() => undefined);
        acking = sent;
        if (stoppedAt >= 0) break;
        const lag = BigInt(batch.highWatermark) - BigInt(chunk[chunk.length - 1].offset) - 1n;
        this.opts.metrics.consumerLag.set({ stage: this.stage, topic: batch.topic, partition: String(batch.partition) }, Number(lag < 0n ? 0n : lag));
        await ctl.heartbeat().catch(() => undefined);
      }
    } finally {
      await settle();
    }
  }

  /**
   * Messages with the same key (agent_id) run sequentially in offset order; different keys run
   * concurrently (bounded), since Kafka's ordering promise is per key and the engine awaits Redis.
   */
  private async processChunk(chunk: InMessage[], ctl: BatchControl): Promise<(StageOutput[] | 'stopped')[]> {
    const results: (StageOutput[] | 'stopped')[] = new Array(chunk.length);
    const byKey = new Map<string, number[]>();
    chunk.forEach((m, idx) => {
      const k = m.key === null ? `\u0000${idx}` : m.key.toString('latin1');
      const list = byKey.get(k);
      if (list) list.push(idx);
      else byKey.set(k, [idx]);
    });
    const lanes = [...byKey.values()];
    let next = 0;
    const worker = async () => {
      for (let lane = lanes[next++]; lane !== undefined; lane = lanes[next++]) {
        let stopped = false;
        for (const idx of lane) {
          results[idx] = stopped ? 'stopped' : await this.processOne(chunk[idx], ctl);
          if (results[idx] === 'stopped') stopped = true;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.keyConcurrency, lanes.length) }, worker));
    return results;
  }

  private async flush(outs: StageOutput[]): Promise<void> {
    if (outs.length === 0) return;
    const byTopic = new Map<string, OutMessage[]>();
    for (const o of outs) {
      const list = byTopic.get(o.topic) ?? [];
      list.push(o.message);
      byTopic.set(o.topic, list);
    }
    await this.opts.producer.send([...byTopic].map(([topic, messages]) => ({ topic, messages })));
  }

  private async processOne(m: InMessage, ctl: BatchControl): Promise<StageOutput[] | 'stopped'> {
    const retry = this.opts.retry ?? { initialMs: 100, maxMs: 5000 };
    let delay = retry.initialMs;
    for (;;) {
      const t0 = performance.now();
      try {
        const outs = await this.proc.process(m);
        this.opts.metrics.stageLatency.observe({ stage: this.stage }, (performance.now() - t0) / 1000);
        this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'ok' });
        return outs;
      } catch (e) {
        if (isRetryable(e)) {
          this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'retry' });
          this.opts.logger.warn({ err: e, stage: this.stage, topic: m.topic, partition: m.partition, offset: m.offset }, 'retryable failure, backing off');
          if (!this.running || !ctl.isRunning()) return 'stopped';
          await sleep(delay);
          delay = Math.min(retry.maxMs, delay * 2);
          await ctl.heartbeat().catch(() => undefined);
          continue;
        }
        const se = e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', e instanceof Error ? e.message : String(e), { cause: e });
        this.opts.metrics.dlq.inc({ stage: this.stage, code: se.code });
        this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'dlq' });
        // One `msg` (pino's message key) and one `stage` (bound by the stage's child logger): the error text is `err`.
        this.opts.logger.warn({ code: se.code, err: se.message, ...('stage' in this.opts.logger.bindings() ? {} : { stage: this.stage }), topic: m.topic, partition: m.partition, offset: m.offset }, 'dead-lettered');
        return [{ topic: this.opts.dlqTopic, message: dlqMessage(m, { code: se.code, message: se.message }, this.stage, (this.opts.nowMs ?? Date.now)()) }];
      }
    }
  }
}

/** Partition key as text (agent_id everywhere). */
export function keyText(m: InMessage): string | null {
  return m.key === null ? null : m.key.toString('utf8');
}

/**
 * Event time of a trace (its ISO timestamp) with the Kafka timestamp as fallback. With `maxSkewMs` the
 * agent's claim is clamped to within that distance of the record timestamp: an agent must not reset its
 * own rate-limit windows or age its trust debt away by writing a timestamp days ahead.
 */
export function eventTimeMs(timestamp: unknown, m: InMessage, maxSkewMs: number | null = null): number {
  const t = typeof timestamp === 'string' ? parseTimestamp(timestamp) : typeof timestamp === 'number' ? timestamp : NaN;
  if (!Number.isFinite(t)) return m.timestampMs;
  if (maxSkewMs === null || !Number.isFinite(m.timestampMs)) return t;
  return Math.min(Math.max(t, m.timestampMs - maxSkewMs), m.timestampMs + maxSkewMs);
}
