/**
 * How a stage's outputs leave (consumers/stage-runner.ts runs the loop): one idempotent send per chunk, or with
 * `transactions` (consumer.exactly_once) one Kafka transaction with the chunk's offset, replies after it committed
 * (but those a processChunk sends early: the gate's, as each answer is recorded, D40 (3)).
 * Should the broker refuse a chunk's send as too large, the chunk is re-sent input by input and the inputs whose
 * outputs it refuses are dead-lettered with DLQ records cut to fit, so no input stalls its partition.
 */
import type { InBatch, InMessage, OutMessage } from '../adapters/kafka/client.js';
import { isMessageTooLarge } from '../adapters/kafka/kafka-error.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../config/steward-config.js';
import type { Logger } from '../logger.js';
import { fitsIn, fittedDlqMessage, toRecords } from './stage-io.js';
import type { StageOutput, StageProcessor, StageRunnerOptions } from './stage-types.js';

/** `stage` for a log line unless the logger already binds it (one `stage` key per line). */
export function stageField(logger: Logger, stage: string): { stage?: string } {
  return 'stage' in logger.bindings() ? {} : { stage };
}

export class StageDelivery {
  constructor(
    private readonly proc: StageProcessor,
    private readonly opts: StageRunnerOptions,
  ) {}

  private get stage(): string {
    return this.proc.stage;
  }

  /**
   * One chunk's outputs. Without transactions: an idempotent send (offsets are resolved once it is
   * acknowledged and committed by kafkajs). With them: the outputs and `last` + 1 as the committed offset, in
   * one transaction, then the `afterCommit` outputs (replies) on their own.
   */
  async deliver(batch: InBatch, outs: StageOutput[], last: string | undefined, first: string): Promise<void> {
    const tx = this.opts.transactions;
    if (!tx) return this.flush(outs);
    if (last === undefined) return;
    const after = outs.filter((o) => o.afterCommit);
    await tx.commit(batch.topic, batch.partition, toRecords(after.length === 0 ? outs : outs.filter((o) => !o.afterCommit)), last, first);
    if (after.length === 0) return;
    // Committed: a failure now must not redo the chunk (its offsets moved on), so it costs the clients their answers only.
    await this.flush(after).catch((e: unknown) => {
      this.opts.logger.warn({ err: e, ...stageField(this.opts.logger, this.stage), topic: batch.topic, partition: batch.partition, replies: after.length }, 'replies after a committed transaction not sent');
    });
  }

  /** Outputs sent at once, on their own (a processor's sendNow; stage-types.ts): not part of any transaction. */
  sendNow(outs: StageOutput[]): Promise<void> {
    return this.flush(outs);
  }

  private async flush(outs: StageOutput[]): Promise<void> {
    if (outs.length === 0) return;
    await this.opts.producer.send(toRecords(outs));
  }

  /**
   * After the broker refused a chunk's send as too large: each input's outputs go out on their own, in
   * offset order (outputs of the chunk that already landed may repeat: at-least-once). An input whose
   * own send is refused twice is dead-lettered (STEWARD_TRACE_TOO_LARGE); if even its DLQ record is
   * refused, a record without the original value and headers is sent, and failing that it is logged and
   * skipped, so the partition always moves on. Other errors fail the batch as usual (redone).
   */
  async flushEach(batch: InBatch, msgs: InMessage[], perInput: StageOutput[][], cause: unknown, last: string | undefined): Promise<void> {
    let offset: string | undefined;
    let first = '';
    const tooLarge = async (outs: StageOutput[]): Promise<boolean> => {
      try {
        await this.deliver(batch, outs, offset, first);
        return false;
      } catch (e) {
        if (!isMessageTooLarge(e)) throw e;
        return true;
      }
    };
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i];
      // With transactions each input commits its own offset (the chunk's last input: past trailing markers too).
      offset = i === msgs.length - 1 ? last : m.offset;
      first = m.offset;
      // One retry: a refused request fails every send merged into it, so an innocent input may share one failure.
      if (!(await tooLarge(perInput[i])) || !(await tooLarge(perInput[i]))) continue;
      const err = { code: 'STEWARD_TRACE_TOO_LARGE', message: `the broker refused an output of this input as too large (${(cause as Error)?.message ?? String(cause)})` };
      this.opts.metrics.dlq.inc({ stage: this.stage, code: err.code });
      this.opts.logger.warn({ code: err.code, ...stageField(this.opts.logger, this.stage), topic: m.topic, partition: m.partition, offset: m.offset }, 'dead-lettered: output refused by the broker as too large');
      if (!(await tooLarge(this.deadLetter(m, err)))) continue;
      if (!(await tooLarge(this.deadLetter(m, err, 0)))) continue;
      if (!(await tooLarge([{ topic: this.opts.dlqTopic, message: this.dlqRecord(m, err, 0) }]))) continue;
      this.opts.logger.error({ ...stageField(this.opts.logger, this.stage), topic: m.topic, partition: m.partition, offset: m.offset }, 'even a bare DLQ record was refused as too large; input skipped');
      await this.deliver(batch, [], offset, m.offset);
    }
  }

  /** The DLQ record of `m`, cut to `limit` bytes (stage-io.ts). */
  private dlqRecord(m: InMessage, err: { code: string; message: string }, limit = this.opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES): OutMessage {
    return fittedDlqMessage(m, err, this.stage, (this.opts.nowMs ?? Date.now)(), limit);
  }

  /** The outputs of a dead-lettered input: the processor's extras (e.g. a client's reply) that fit, then the DLQ record. */
  deadLetter(m: InMessage, err: { code: string; message: string }, dlqLimit?: number): StageOutput[] {
    const limit = this.opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    let extra: StageOutput[] = [];
    try {
      extra = (this.proc.onDeadLetter?.(m, err) ?? []).filter((o) => fitsIn(o.message, limit));
    } catch (e) {
      this.opts.logger.warn({ err: e, ...stageField(this.opts.logger, this.stage) }, 'onDeadLetter failed');
    }
    return [...extra, { topic: this.opts.dlqTopic, message: this.dlqRecord(m, err, dlqLimit) }];
  }
}
