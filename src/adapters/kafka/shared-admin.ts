/**
 * One admin client kept open and shared by the join's trace readers (trace-reader.ts), and a bound on how long
 * one of their broker questions may take. Before, every question (a partition's end, the topic's partition count)
 * connected and disconnected an admin client of its own: a scorer chunk's lanes reading a partition for the first
 * time (every start, every rebalance) opened hundreds of connections at once.
 */
import type { KafkaAdapter } from './client.js';
import type { StewardAdmin } from './kafka-types.js';

export class SharedAdmin {
  private admin?: Promise<StewardAdmin>;
  private closed = false;

  constructor(private readonly adapter: KafkaAdapter) {}

  /**
   * Runs `fn` on the shared client, connected on first use. A connect that fails is forgotten (the next call
   * connects again); so is a client whose question failed (its connection may be what failed), closed first.
   */
  async use<T>(fn: (a: StewardAdmin) => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('admin closed');
    const p = (this.admin ??= this.adapter.admin());
    let a: StewardAdmin;
    try {
      a = await p;
    } catch (e) {
      if (this.admin === p) this.admin = undefined;
      throw e;
    }
    // Closed while connecting: this client was never handed to close().
    if (this.closed) {
      await a.disconnect().catch(() => undefined);
      throw new Error('admin closed');
    }
    try {
      return await fn(a);
    } catch (e) {
      if (this.admin === p) {
        this.admin = undefined;
        void a.disconnect().catch(() => undefined);
      }
      throw e;
    }
  }

  /**
   * A partition's end (high watermark) as the broker reports it now; undefined when not known within `ms` (a broker
   * away is retried by kafkajs for much longer: the question is let go of, so that the next one is asked anew).
   */
  partitionEnd(topic: string, partition: number, ms: number): Promise<bigint | undefined> {
    const q = this.use((a) => a.topicOffsets(topic)).then(
      (offs) => {
        const high = offs.find((x) => x.partition === partition)?.high;
        return high === undefined ? undefined : BigInt(high);
      },
      () => undefined,
    );
    return timeBoxed(q, ms, undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    const p = this.admin;
    this.admin = undefined;
    const a = await p?.catch(() => undefined);
    await a?.disconnect().catch(() => undefined);
  }
}

/** `p`, or `onTimeout` once `ms` passed (`p` is left to settle on its own). */
export function timeBoxed<T>(p: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((r) => (t = setTimeout(() => r(onTimeout), ms)))]).finally(() => clearTimeout(t));
}

/**
 * A broker question asked by many reads at once: one in flight at a time, its answer shared. An answer that the
 * caller would act on (`recheck`) from a question asked before the caller came may be older than what the caller
 * knows exists (a trace written before its decision was read): that caller asks once more.
 */
export class SharedQuestion<T> {
  private inFlight?: Promise<T>;

  constructor(private readonly ask: () => Promise<T>) {}

  async get(recheck: (answer: T) => boolean): Promise<T> {
    const joined = this.inFlight !== undefined;
    const answer = await this.once();
    return joined && recheck(answer) ? this.once() : answer;
  }

  private once(): Promise<T> {
    this.inFlight ??= this.ask().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }
}
