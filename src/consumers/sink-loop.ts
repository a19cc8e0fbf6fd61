/**
 * The sink stage's consumer loop (src/process/sink-stage.ts wires it): pipelined batches, offsets committed per
 * partition in order once inserted. Split from the wiring: the loop knows Kafka batches and commits, not tables.
 */
import { lagAfter, type BatchControl, type InBatch } from '../adapters/kafka/client.js';
import type { Logger } from '../logger.js';
import type { SinkProcessor } from './sink-processor.js';

export interface SinkLoopOptions {
  /** Topics whose batches are fully inserted before the partition is fetched again (the ledger: one chain writer). */
  serialTopics?: readonly string[];
  /** Committed offsets are flushed at most this often (default 1000 ms); every committed offset is inserted. */
  commitIntervalMs?: number;
  /** Moves a partition's fetch position back (StewardConsumer.seek) after a batch of it failed. */
  seek?: (topic: string, partition: number, offset: string) => void;
  logger?: Logger;
  /** Told each batch's lag behind its partition's high watermark (the stage's consumer-lag metric). */
  onLag?: (topic: string, partition: number, lag: number) => void;
}

interface PendingCommit {
  offset: string;
  ctl: BatchControl;
  generation: number;
}

/**
 * The stage's consumer loop (kafkajs eachBatch with autoCommit off), pipelined: a batch is mapped and handed
 * to the sink, its offset resolved at once (which only advances kafkajs' fetch position) and the handler
 * returns as soon as the partition's *previous* batch is inserted, so kafkajs fetches and decodes the next
 * batch while this one's inserts run. Offsets are committed explicitly, per partition in offset order, only
 * after the batch and every earlier batch of the partition were inserted (or dead-lettered). A failed batch
 * stops its partition's commits, moves the fetch position back to it, and fails the partition's next handler
 * (kafkajs retries from there). A rebalance (group join) drops the previous generation's pending commits:
 * the new owner re-reads those records and the tables dedupe them. Serial topics (the ledger) are inserted
 * before the handler returns, as without pipelining. Used by startSinkStage and by bench/sink.
 */
/** A batch's processing failed: where its partition is read again from. */
class BatchFailed extends Error {
  constructor(
    readonly from: string,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

export class SinkConsumerLoop {
  private generation = 0;
  /** Per `topic\0partition`: the latest batch (resolves once it and all earlier ones are in). */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly outstanding = new Set<Promise<void>>();
  private readonly commits = new Map<string, PendingCommit>();
  private commitTimer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (ms, Date.now()). */
  private commitTimerAt = 0;
  private lastCommitAt = 0;
  private committing: Promise<void> = Promise.resolve();
  private stopping: Promise<void> | undefined;
  private readonly serial: Set<string>;
  private readonly commitIntervalMs: number;

  constructor(
    private readonly proc: SinkProcessor,
    private readonly opts: SinkLoopOptions = {},
  ) {
    this.serial = new Set(opts.serialTopics ?? []);
    this.commitIntervalMs = Math.max(0, opts.commitIntervalMs ?? 1000);
  }

  /** Call on every group join (a new generation: earlier batches' offsets are no longer ours to commit). */
  onGroupJoin(): void {
    this.generation++;
    this.tails.clear();
    this.commits.clear();
  }

  get pendingBatches(): number {
    return this.outstanding.size;
  }

  /** Resolves once no batch is outstanding (inserted, dead-lettered or failed). */
  async idle(): Promise<void> {
    while (this.outstanding.size > 0) await Promise.all([...this.outstanding]);
  }

  readonly handler = async (batch: InBatch, ctl: BatchControl): Promise<void> => {
    // Fetched before a seek back to a failed batch: kafkajs reads the partition again from there.
    if (batch.messages.length === 0 || ctl.isStale()) return;
    if (this.stopping) {
      // Stopping: nothing new is processed (nor committed); the next owner reads it.
      await this.stopping;
      return;
    }
    const key = `${batch.topic}\u0000${batch.partition}`;
    const generation = this.generation;
    const first = batch.messages[0].offset;
    // Past trailing transaction markers and aborted records too (verdicts are written in transactions): a commit
    // short of them would leave a lag of 1 that never clears, and a caught-up sink would never expedite.
    const lastMessage = batch.messages[batch.messages.length - 1].offset;
    const last = batch.lastOffset !== undefined && BigInt(batch.lastOffset) > BigInt(lastMessage) ? batch.lastOffset : lastMessage;
    const prev = this.tails.get(key);
    const lag = lagAfter(last, batch.highWatermark);
    if (lag !== undefined) this.opts.onLag?.(batch.topic, batch.partition, lag);
    const done = this.proc.process(batch.messages, lag === 0).catch((e: unknown) => {
      throw new BatchFailed(first, e);
    });
    // After the previous batch: a partition's earliest failed batch is what every later tail rejects with.
    const tail: Promise<void> = (prev ? prev.then(() => done) : done).then(
      (expedited) => {
        if (generation === this.generation) this.commitLater(key, { offset: last, ctl, generation }, expedited);
      },
      (e: unknown) => {
        // Nothing of the failed batch or later ones of the partition is committed; the latest batch moves the
        // fetch position back to the earliest failed one (seeking to its own start would skip the records between).
        if (generation === this.generation && this.tails.get(key) === tail) {
          this.tails.delete(key);
          this.opts.seek?.(batch.topic, batch.partition, e instanceof BatchFailed ? e.from : first);
        }
        throw e;
      },
    );
    if (prev) done.catch(() => undefined); // reported through `prev` when an earlier batch failed first
    this.tails.set(key, tail);
    const tracked: Promise<void> = tail.then(
      () => undefined,
      () => undefined,
    );
    this.outstanding.add(tracked);
    void tracked.then(() => {
      this.outstanding.delete(tracked);
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    ctl.resolveOffset(last);
    const wait = this.serial.has(batch.topic) ? tail : prev;
    if (!wait) return;
    // kafkajs heartbeats only when asked: keep the membership alive while inserts wait for ClickHouse,
    // or the group would evict this instance mid-outage and hand its partitions (and chains) to another.
    const beat = setInterval(() => void ctl.heartbeat().catch(() => undefined), 1000);
    try {
      await wait;
    } catch (e) {
      throw e instanceof BatchFailed ? e.cause : e;
    } finally {
      clearInterval(beat);
    }
    await ctl.heartbeat();
  };

  /**
   * Stops taking batches, waits for the outstanding ones (at most `timeoutMs`; then `onTimeout`, which must make
   * them settle, e.g. sink.abort()), and commits what was inserted. Call before consumer.stop().
   */
  async drain(timeoutMs: number, onTimeout: () => void): Promise<boolean> {
    let release!: () => void;
    this.stopping ??= new Promise<void>((r) => (release = r));
    let timer: NodeJS.Timeout | undefined;
    const clean = await Promise.race([
      this.idle().then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!clean) {
      onTimeout();
      await this.idle();
    }
    await this.flushCommits();
    release?.();
    return clean;
  }

  /**
   * Commits at most once per commitIntervalMs. `soon`: the batch caught up with its partition and its rows
   * went out at once (ClickHouseSink expediteRows), so no later batch will come soon to share this commit:
   * the wait shrinks to a tenth of the interval. A trickle is never expedited, so it keeps the full interval
   * (one commit request per partition per caught-up batch would otherwise follow every message).
   */
  private commitLater(key: string, c: PendingCommit, soon = false): void {
    this.commits.set(key, c);
    const at = this.lastCommitAt + (soon ? this.commitIntervalMs / 10 : this.commitIntervalMs);
    if (this.commitTimer) {
      if (at >= this.commitTimerAt) return;
      clearTimeout(this.commitTimer);
      this.commitTimer = undefined;
    }
    const wait = at - Date.now();
    if (wait <= 0) void this.flushCommits();
    else {
      this.commitTimerAt = at;
      this.commitTimer = setTimeout(() => void this.flushCommits(), wait);
    }
  }

  /** Commits the pending offsets (one commit at a time; a failed one is retried with the next flush). */
  private flushCommits(): Promise<void> {
    if (this.commitTimer) clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    this.committing = this.committing.then(async () => {
      this.lastCommitAt = Date.now();
      const todo = [...this.commits];
      this.commits.clear();
      for (const [key, c] of todo) {
        if (c.generation !== this.generation) continue;
        try {
          await c.ctl.commitOffset?.(c.offset);
        } catch (e) {
          this.opts.logger?.warn({ err: (e as Error).message }, 'sink: offset commit failed, retrying with the next one');
          if (!this.commits.has(key) && c.generation === this.generation) this.commitLater(key, c);
        }
      }
    });
    return this.committing;
  }
}
