/**
 * The idempotent producer under KafkaAdapter.producer(), replaced after every failed request. kafkajs winds back
 * the sequence numbers of every partition of a failed request, also of those the broker wrote (one partition's
 * error fails the whole request), and never renews the producer id: the next send to such a partition would be
 * acknowledged as a duplicate without being written, or refused as out of order forever. A new producer (new
 * id, sequences from 0) is used from the next send on.
 */
import { StewardError } from '../../errors.js';
import type { OutRecord } from './kafka-types.js';

/** One kafkajs producer, reduced to what the adapter needs (this module stays free of kafkajs). */
export interface BatchSender {
  connect(): Promise<void>;
  sendBatch(topicMessages: OutRecord[]): Promise<unknown>;
  disconnect(): Promise<void>;
}

/** Connects a first producer from `make`; its sendBatch uses a fresh one after any failure. */
export async function renewingSender(make: () => BatchSender): Promise<{ sendBatch(topicMessages: OutRecord[]): Promise<void>; disconnect(): Promise<void> }> {
  let current: Promise<BatchSender> | undefined;
  let closed = false;
  const fresh = (): Promise<BatchSender> => {
    const p = make();
    const ready = p.connect().then(
      () => p,
      (e: unknown) => {
        if (current === ready) current = undefined;
        // connect() may have opened broker connections before failing (e.g. in initProducerId).
        void p.disconnect().catch(() => undefined);
        throw e;
      },
    );
    current = ready;
    return ready;
  };
  await fresh();
  return {
    async sendBatch(topicMessages) {
      // After disconnect() nothing may open a producer again (it would hold sockets nobody closes).
      if (closed) throw new StewardError('STEWARD_KAFKA', 'producer disconnected');
      const p = await (current ?? fresh());
      try {
        await p.sendBatch(topicMessages);
      } catch (e) {
        current = undefined;
        void p.disconnect().catch(() => undefined);
        throw e;
      }
    },
    async disconnect() {
      closed = true;
      const p = await current?.catch(() => undefined);
      current = undefined;
      await p?.disconnect();
    },
  };
}
