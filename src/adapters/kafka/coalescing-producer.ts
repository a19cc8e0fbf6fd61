/**
 * The producer's send coalescing (KafkaAdapter.producer wraps kafkajs with it): sends issued while a request
 * is in flight are merged into the next request in call order, bounded in bytes per request.
 */
import type { OutMessage, OutRecord, StewardProducer } from './kafka-types.js';
import { kafkaError } from './kafka-error.js';

/** One `send` call: settled when all its pieces were acknowledged, or at its first failed piece. */
interface SendCall {
  pieces: number;
  failed: boolean;
  resolve: () => void;
  reject: (e: unknown) => void;
}
interface Piece {
  call: SendCall;
  records: OutRecord[];
  bytes: number;
}

const messageBytes = (m: OutMessage) => (m.value?.length ?? 0) + (m.key?.length ?? 0);

/** Splits one send's records, in order, into pieces of at most `max` bytes (a bigger message alone). */
export function splitRecords(records: OutRecord[], max: number): { records: OutRecord[]; bytes: number }[] {
  const pieces: { records: OutRecord[]; bytes: number }[] = [];
  let cur: { records: OutRecord[]; bytes: number } = { records: [], bytes: 0 };
  for (const r of records) {
    let slot: OutRecord | undefined;
    for (const m of r.messages) {
      const b = messageBytes(m);
      if (cur.bytes > 0 && cur.bytes + b > max) {
        pieces.push(cur);
        cur = { records: [], bytes: 0 };
        slot = undefined;
      }
      if (!slot) {
        slot = { topic: r.topic, messages: [] };
        cur.records.push(slot);
      }
      slot.messages.push(m);
      cur.bytes += b;
    }
  }
  if (cur.records.length > 0) pieces.push(cur);
  return pieces;
}

/**
 * The send queue of `KafkaAdapter.producer()`: at most one `sendBatch` in flight; what is handed to
 * `send` meanwhile goes out together next, records of one topic concatenated in call order. Requests stay
 * under `maxRequestBytes` (the broker's max.message.bytes bounds each partition's record batch): a
 * larger send is split, in order, into several requests, and once one of them fails the rest of that
 * send is not sent (so nothing of it lands after a gap).
 */
/** The largest produce request the adapter sends: the broker's max.message.bytes bounds each partition's record batch. */
export const MAX_REQUEST_BYTES = 512 * 1024;

/**
 * `o.turn`: an idle producer waits for the end of the event-loop turn (a setImmediate) before it sends, so that the
 * sends made in one turn go out as one request, not the first alone and the rest in the next (D53: the HTTP ingress's
 * batches whose claims answered in one Redis read send in one turn). Costs one event-loop hop on an idle producer.
 */
export function coalescingProducer(sendBatch: (topicMessages: OutRecord[]) => Promise<void>, disconnect: () => Promise<void>, maxRequestBytes = MAX_REQUEST_BYTES, o: { turn?: boolean } = {}): StewardProducer {
  let queue: Piece[] = [];
  let busy = false;
  let waiting = false;
  const pumpAtTurnEnd = (): void => {
    if (waiting || busy) return;
    waiting = true;
    setImmediate(() => {
      waiting = false;
      pump();
    });
  };
  const pump = (): void => {
    if (busy) return;
    queue = queue.filter((p) => !p.call.failed);
    if (queue.length === 0) return;
    let n = 0;
    let bytes = 0;
    while (n < queue.length) {
      const b = queue[n]!.bytes;
      if (n > 0 && bytes + b > maxRequestBytes) break;
      bytes += b;
      n++;
    }
    const group = queue.slice(0, n);
    queue = queue.slice(n);
    busy = true;
    const byTopic = new Map<string, OutMessage[]>();
    for (const w of group) {
      for (const r of w.records) {
        const list = byTopic.get(r.topic);
        if (list) for (const m of r.messages) list.push(m);
        else byTopic.set(r.topic, r.messages.slice());
      }
    }
    const done = (err?: unknown) => {
      busy = false;
      for (const w of group) {
        const c = w.call;
        if (c.failed) continue;
        if (err !== undefined) {
          c.failed = true;
          c.reject(err);
        } else if (--c.pieces === 0) c.resolve();
      }
      pump();
    };
    sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages }))).then(
      () => done(),
      (e: unknown) => done(kafkaError(e, 'produce failed')),
    );
  };
  return {
    send(records) {
      return new Promise<void>((resolve, reject) => {
        const pieces = splitRecords(records, maxRequestBytes);
        if (pieces.length === 0) return resolve();
        const call: SendCall = { pieces: pieces.length, failed: false, resolve, reject };
        for (const p of pieces) queue.push({ call, records: p.records, bytes: p.bytes });
        if (o.turn) pumpAtTurnEnd();
        else pump();
      });
    },
    disconnect,
  };
}
