/**
 * The shared consume → process → produce loop of every stage.
 *
 * Delivery: each partition's batch is processed in chunks (per key in order, keys concurrently); a chunk's outputs (including
 * DLQ records) go out in one idempotent send — but those a processChunk sends early (the gate's replies, as each
 * answer is recorded) — and only after the broker acknowledged them are the chunk's offsets resolved (kafkajs commits resolved offsets on its interval, on rebalance and on stop).
 * With `transactions` (consumer.exactly_once) a chunk's outputs and its offset commit instead in one Kafka
 * transaction of the partition's own producer (replies are sent after it committed, but a processChunk's early ones:
 * the gate's, D40 (3)), so a redone chunk's
 * first outputs are never read (adapters/kafka/partition-transactions.ts).
 * The next chunk is processed while the previous one's send is being acknowledged; its own send waits
 * for that acknowledgement, so outputs keep offset order.
 * A crash therefore replays at most the unacknowledged tail: at-least-once, made idempotent downstream by
 * trace_id / event_id. Non-retryable errors dead-letter the message; retryable ones (Redis, registry
 * outages) are retried with backoff while the partition waits, so nothing is skipped.
 *
 * No input may stall its partition with a send that can never succeed: processors check their outputs
 * against `maxMessageBytes` (and dead-letter inputs whose outputs would not fit), DLQ records are cut to
 * fit, and should the broker still refuse a record as too large (MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE,
 * e.g. a topic whose max.message.bytes is below the configured limit) the chunk is re-sent input by input
 * and the inputs whose outputs the broker refuses are dead-lettered (STEWARD_TRACE_TOO_LARGE).
 * Sending, transactions, that fallback and DLQ records are stage-delivery.ts; this file is the loop.
 */
import { lagAfter, type InMessage, type StewardConsumer, type InBatch, type BatchControl } from '../adapters/kafka/client.js';
import { DLQ_DROPPED_HEADER } from '../adapters/kafka/dlq.js';
import { LagRefresher } from './lag-refresher.js';
import { StageDelivery, stageField } from './stage-delivery.js';
import type { StageOutput, StageProcessor, StageRunnerOptions } from './stage-types.js';
import { isMessageTooLarge, isRebalance } from '../adapters/kafka/kafka-error.js';
import { StewardError, isRetryable } from '../errors.js';

export type { StageOutput, StageProcessor, StageRunnerOptions } from './stage-types.js';

export { DLQ_DROPPED_HEADER };
export { eventTimeMs, fitsIn, keyText, messageBytes } from './stage-io.js';

/** How often a running chunk asks kafkajs to heartbeat (kafkajs sends one at most every heartbeat interval, 1 s). */
const HEARTBEAT_EVERY_MS = 1000;

export { isMessageTooLarge };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class StageRunner {
  private consumer?: StewardConsumer;
  private running = false;
  private joined = false;
  /** Joined its group at least once in this process (a crash after that is an outage, not a configuration error). */
  private everJoined = false;
  /** stop() was called: a pending consumer restart must not bring the stage back. */
  private stopRequested = false;
  private readonly lag: LagRefresher;
  private readonly chunkSize: number;
  private readonly keyConcurrency: number;
  /** Where the outputs go: sends, transactions, the too-large fallback and DLQ records. */
  private readonly out: StageDelivery;

  constructor(
    private readonly proc: StageProcessor,
    private readonly opts: StageRunnerOptions,
  ) {
    this.chunkSize = opts.chunkSize ?? 500;
    this.lag = new LagRefresher({ adapter: opts.adapter, groupId: opts.groupId, stage: proc.stage, metrics: opts.metrics, everyMs: opts.lagRefreshMs ?? 15_000 });
    this.keyConcurrency = opts.keyConcurrency ?? 32;
    this.out = new StageDelivery(proc, opts);
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
    c.onGroupJoin((assignment) => {
      this.joined = true;
      this.everJoined = true;
      this.opts.transactions?.reassigned();
      this.lag.assigned(assignment);
      this.opts.metrics.retainLag(this.stage, assignment);
    });
    c.onCrash((err, willRestart) => {
      this.opts.logger.error({ err, stage: this.stage, willRestart }, 'consumer crashed');
      // Not in a group until the next join, also while kafkajs restarts the consumer itself.
      this.joined = false;
      this.lag.assigned({});
      if (willRestart) return;
      this.opts.metrics.retainLag(this.stage);
      if (!this.everJoined && (err as { retriable?: boolean }).retriable === false && this.opts.onFatal && !this.stopRequested) {
        this.opts.onFatal(err);
        return;
      }
      // kafkajs gave up on this consumer (e.g. retries exhausted while a broker was down): without a new one
      // the stage would sit idle in a live process. Nothing was committed past what was acknowledged.
      if (!this.stopRequested && this.consumer === c) this.restartLater(c);
    });
    await c.subscribe(this.proc.inputTopics, true);
    if (this.stopRequested) {
      await c.disconnect().catch(() => undefined);
      return;
    }
    this.running = true;
    this.lag.start();
    await c.runBatches((b, ctl) => this.onBatch(b, ctl), {
      partitionsConcurrently: this.opts.partitionsConcurrently ?? 4,
      autoCommitIntervalMs: this.opts.autoCommitIntervalMs ?? 1000,
      // Transactions commit the offsets; kafkajs committing resolved ones too would move them outside a transaction.
      autoCommit: !this.opts.transactions,
    });
  }

  /** Replaces a consumer kafkajs will not restart, after `restartDelayMs` (again, later, if that start fails). */
  private restartLater(dead: StewardConsumer): void {
    const current = () => !this.stopRequested && this.consumer === dead;
    setTimeout(() => {
      if (!current()) return;
      void (async () => {
        await dead.disconnect().catch(() => undefined);
        if (!current()) return;
        this.opts.logger.warn({ stage: this.stage }, 'restarting the crashed consumer');
        try {
          await this.start();
        } catch (e) {
          this.opts.logger.error({ err: e, stage: this.stage }, 'consumer restart failed; retrying');
          if (!this.stopRequested && this.consumer) this.restartLater(this.consumer);
          return;
        }
        // stop() ran while the new consumer was starting: it stopped the old one, so stop this one too.
        if (this.stopRequested) await this.stop();
      })();
    }, this.opts.restartDelayMs ?? 2000).unref();
  }

  /** Graceful: stop fetching, let in-flight chunks finish and their offsets commit, then disconnect. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    const lagStopped = this.lag.stop();
    if (!this.consumer) {
      await this.opts.transactions?.disconnect();
      return lagStopped;
    }
    this.running = false;
    try {
      await this.consumer.stop();
      await this.consumer.disconnect();
    } finally {
      // Also when the consumer failed to stop: its transactional producers and admin connection are closed.
      this.consumer = undefined;
      await this.opts.transactions?.disconnect();
    }
    await lagStopped;
    this.opts.metrics.retainLag(this.stage);
  }

  /**
   * Chunks of one partition in offset order. Chunk n+1 is processed while chunk n's outputs are being
   * acknowledged; chunk n+1's outputs are sent only after that acknowledgement and its offsets resolved
   * only after its own, so outputs leave in offset order and offsets never run ahead of acknowledged
   * outputs. A failed send throws here (the batch is redone from the last resolved offset).
   */
  private async onBatch(batch: InBatch, ctl: BatchControl): Promise<void> {
    // kafkajs heartbeats only when asked. A chunk can outlast the session (a scorer awaiting an LLM per trace,
    // one agent's traces in a row): without beats the group evicts this member, hands the partition to another,
    // and the chunk is redone there and here, never committed. A beat that reports a rebalance stops the chunk
    // at its next message (the finished prefix is kept).
    const state = { rebalancing: false };
    const beat = setInterval(() => {
      ctl.heartbeat().catch((e: unknown) => {
        if (isRebalance(e)) state.rebalancing = true;
      });
    }, HEARTBEAT_EVERY_MS);
    let acking: Promise<void> | undefined;
    const settle = async () => {
      const a = acking;
      acking = undefined;
      if (a) await a;
    };
    try {
      // Claiming (transactions) may wait on the transaction coordinator: already under heartbeats.
      const msgs = await this.unclaimed(batch, ctl);
      for (let i = 0; i < msgs.length; i += this.chunkSize) {
        if (!ctl.isRunning() || ctl.isStale()) break;
        const chunk = msgs.slice(i, i + this.chunkSize);
        const results = await this.processChunk(chunk, ctl, state);
        const stoppedAt = results.findIndex((r) => r === 'stopped');
        const done = stoppedAt < 0 ? results.length : stoppedAt;
        // Outputs in offset order; on a stop, only the prefix before the first unfinished message counts
        // (later ones are redone after the restart: at-least-once, idempotent downstream).
        const perInput = results.slice(0, done) as StageOutput[][];
        const outs = perInput.flat();
        await settle();
        // The batch's last chunk, finished: also past trailing transaction markers and aborted records, so a
        // committed offset never stops short of them (a backlog check would count them as unread).
        const whole = done === chunk.length && i + this.chunkSize >= msgs.length;
        const last = done === 0 ? undefined : whole && batch.lastOffset !== undefined && BigInt(batch.lastOffset) > BigInt(chunk[done - 1].offset) ? batch.lastOffset : chunk[done - 1].offset;
        const sent = this.out.deliver(batch, outs, last, chunk[0].offset)
          .catch((e: unknown) => {
            // Never retried as a whole: the same bytes would be refused forever and the partition would stall.
            if (!isMessageTooLarge(e)) throw e;
            this.opts.logger.warn({ err: e, ...this.stageField(), topic: batch.topic, partition: batch.partition }, 'broker refused an output as too large; re-sending the chunk input by input');
            return this.out.flushEach(batch, chunk.slice(0, done), perInput, e, last);
          })
          .then(() => {
            if (last !== undefined) ctl.resolveOffset(last);
          });
        // Awaited before the next flush or on exit; the no-op handler only keeps a failure that happens
        // while the next chunk is processed from being reported as unhandled in between.
        sent.catch(() => undefined);
        acking = sent;
        if (stoppedAt >= 0) break;
        const lag = lagAfter(last ?? chunk[chunk.length - 1].offset, batch.highWatermark);
        if (lag !== undefined) {
          this.opts.metrics.setLag(this.stage, batch.topic, batch.partition, lag);
          this.lag.reported(batch.topic, batch.partition);
        }
        // A rebalance: hand the partition over after this chunk rather than process the rest of the batch.
        if (state.rebalancing || (await this.rebalancing(ctl))) break;
      }
    } finally {
      clearInterval(beat);
      await settle();
    }
  }

  /**
   * Messages with the same key (agent_id) run sequentially in offset order; different keys run
   * concurrently (bounded), since Kafka's ordering promise is per key and the engine awaits Redis.
   */
  private async processChunk(chunk: InMessage[], ctl: BatchControl, state: { rebalancing: boolean }): Promise<(StageOutput[] | 'stopped')[]> {
    const results: (StageOutput[] | 'stopped')[] = new Array(chunk.length);
    if (this.proc.processChunk && !state.rebalancing && ctl.isRunning()) await this.wholeChunk(this.proc.processChunk.bind(this.proc), chunk, results, () => state.rebalancing || !ctl.isRunning());
    const byKey = new Map<string, number[]>();
    chunk.forEach((m, idx) => {
      if (results[idx] !== undefined) return; // done by processChunk
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
          // A rebalance or a shutdown: the finished prefix is kept, the rest is redone by the next owner or start.
          results[idx] = stopped || state.rebalancing || !ctl.isRunning() ? 'stopped' : await this.processOne(chunk[idx], ctl);
          if (results[idx] === 'stopped') stopped = true;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.keyConcurrency, lanes.length) }, worker));
    return results;
  }

  /**
   * A processor's processChunk: the inputs it finished count as processed (each observed with the chunk's time:
   * that is how long it waited for its answer); the rest stay undefined for the lanes (process(), retries, DLQ).
   */
  private async wholeChunk(fn: NonNullable<StageProcessor['processChunk']>, chunk: InMessage[], results: (StageOutput[] | 'stopped')[], shouldStop: () => boolean): Promise<void> {
    const t0 = performance.now();
    // Outputs the processor let go early (the gate's replies): sent now, concurrently with the rest of the chunk.
    const early: { at: number; outs: StageOutput[]; sent: Promise<boolean> }[] = [];
    const sendNow = (at: number, outs: StageOutput[]) => {
      if (outs.length === 0) return;
      const sent = this.out.sendNow(outs).then(
        () => true,
        (e: unknown) => {
          this.opts.logger.warn({ err: e, ...this.stageField(), records: outs.length }, 'early outputs not sent: they go with the chunk');
          return false;
        },
      );
      early.push({ at, outs, sent });
    };
    let done: (StageOutput[] | undefined)[];
    try {
      done = await fn(chunk, shouldStop, sendNow);
    } catch (e) {
      // process() makes every output again, the early ones too (a client takes the first reply it gets).
      this.opts.logger.warn({ err: e, ...this.stageField() }, 'processChunk failed: processing the chunk input by input');
      return;
    }
    // Before the chunk's produce, so an early output that failed goes with it and its offset is not resolved without it.
    for (const x of early) if (!(await x.sent) && done[x.at] !== undefined) done[x.at] = [...x.outs, ...done[x.at]!];
    const s = (performance.now() - t0) / 1000;
    let n = 0;
    for (let i = 0; i < chunk.length; i++) {
      const outs = done[i];
      if (outs === undefined) continue;
      results[i] = outs;
      n++;
      this.opts.metrics.stageLatency.observe({ stage: this.stage }, s);
    }
    if (n > 0) this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'ok' }, n);
  }

  /**
   * With transactions: claims the batch's partition (fencing its earlier owners) and drops the records an
   * earlier owner committed after this member's fetch position was set (resolved, not processed).
   */
  private async unclaimed(batch: InBatch, ctl: BatchControl): Promise<InMessage[]> {
    const tx = this.opts.transactions;
    if (!tx) return batch.messages;
    const floor = await tx.claim(batch.topic, batch.partition);
    const msgs = batch.messages;
    let skip = 0;
    while (skip < msgs.length && BigInt(msgs[skip].offset) < floor) skip++;
    if (skip === 0) return msgs;
    this.opts.logger.info({ ...this.stageField(), topic: batch.topic, partition: batch.partition, skipped: skip, committed: floor.toString() }, 'skipping records a previous owner of the partition committed');
    ctl.resolveOffset(msgs[skip - 1].offset);
    return msgs.slice(skip);
  }

  /** Heartbeats; true when the group is rebalancing (or this member left its generation). */
  private async rebalancing(ctl: BatchControl): Promise<boolean> {
    try {
      await ctl.heartbeat();
      return false;
    } catch (e) {
      if (!isRebalance(e)) return false;
      this.opts.logger.info({ ...this.stageField(), type: (e as { type?: string }).type }, 'group rebalancing: finishing the batch early');
      return true;
    }
  }

  /** `stage` for a log line unless the logger already binds it (one `stage` key per line). */
  private stageField(): { stage?: string } {
    return stageField(this.opts.logger, this.stage);
  }

  /** The retry bound of `e`'s code (opts.retryLimitsMs; 0 or absent: retried without bound). */
  private retryLimitMs(e: unknown): number | undefined {
    const code = (e as { code?: unknown } | null)?.code;
    const limit = typeof code === 'string' ? this.opts.retryLimitsMs?.[code] : undefined;
    return limit !== undefined && limit > 0 ? limit : undefined;
  }

  private async processOne(m: InMessage, ctl: BatchControl): Promise<StageOutput[] | 'stopped'> {
    const retry = this.opts.retry ?? { initialMs: 100, maxMs: 5000 };
    let delay = retry.initialMs;
    let firstFailureMs: number | undefined;
    for (;;) {
      const t0 = performance.now();
      try {
        const outs = await this.proc.process(m);
        this.opts.metrics.stageLatency.observe({ stage: this.stage }, (performance.now() - t0) / 1000);
        this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'ok' });
        return outs;
      } catch (e) {
        const limitMs = this.retryLimitMs(e);
        firstFailureMs ??= performance.now();
        const gaveUp = limitMs !== undefined && performance.now() - firstFailureMs >= limitMs;
        if (isRetryable(e) && !gaveUp) {
          this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'retry' });
          this.opts.logger.warn({ err: e, stage: this.stage, topic: m.topic, partition: m.partition, offset: m.offset }, 'retryable failure, backing off');
          if (!this.running || !ctl.isRunning()) return 'stopped';
          await sleep(delay);
          delay = Math.min(retry.maxMs, delay * 2);
          // Waiting out an outage must not hold the partition through a rebalance: this member would keep
          // retrying past its eviction while the new owner processes the same records (duplicates, split order).
          if (await this.rebalancing(ctl)) return 'stopped';
          continue;
        }
        const se = e instanceof StewardError ? e : new StewardError('STEWARD_EVAL', e instanceof Error ? e.message : String(e), { cause: e });
        if (gaveUp) this.opts.logger.error({ code: se.code, err: se.message, ...this.stageField(), topic: m.topic, partition: m.partition, offset: m.offset, retried_ms: Math.round(performance.now() - firstFailureMs) }, 'retry limit reached: dead-lettering the input');
        this.opts.metrics.dlq.inc({ stage: this.stage, code: se.code });
        this.opts.metrics.messages.inc({ stage: this.stage, outcome: 'dlq' });
        // One `msg` (pino's message key) and one `stage` (bound by the stage's child logger): the error text is `err`.
        this.opts.logger.warn({ code: se.code, err: se.message, ...this.stageField(), topic: m.topic, partition: m.partition, offset: m.offset }, 'dead-lettered');
        return this.out.deadLetter(m, { code: se.code, message: se.message });
      }
    }
  }
}
