import { describe, expect, it } from 'vitest';
import type { BatchControl, InBatch, InMessage } from '../../../src/adapters/kafka/client.js';
import type { SinkProcessor } from '../../../src/consumers/sink-processor.js';
import { SinkConsumerLoop } from '../../../src/consumers/sink-loop.js';

function batch(partition: number, from: number, to: number, highWatermark: number): InBatch {
  const messages: InMessage[] = [];
  for (let o = from; o <= to; o++) messages.push({ topic: 'd', partition, offset: String(o), key: null, value: Buffer.from('{}'), headers: {}, timestampMs: 0 });
  return { topic: 'd', partition, highWatermark: String(highWatermark), messages };
}

function control(committed: string[]): BatchControl {
  return {
    resolveOffset: () => {},
    heartbeat: async () => {},
    isRunning: () => true,
    isStale: () => false,
    commit: async () => {},
    commitOffset: async (offset) => void committed.push(offset),
  };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SinkConsumerLoop', () => {
  it('commits at most once per interval; a batch that caught up and went out at once waits a tenth of it', async () => {
    const caughtUp: boolean[] = [];
    // The processor reports the batch as expedited when it caught up (as ClickHouseSink does with enough rows).
    const proc = { process: async (_m: InMessage[], c = false) => (caughtUp.push(c), c) } as unknown as SinkProcessor;
    const loop = new SinkConsumerLoop(proc, { commitIntervalMs: 1000 });
    loop.onGroupJoin();
    const committed: string[] = [];
    const ctl = control(committed);
    await loop.handler(batch(0, 0, 9, 100), ctl);
    await settle(10);
    expect(committed).toEqual(['9']); // the first commit goes at once; the interval starts now
    await loop.handler(batch(0, 10, 19, 100), ctl);
    await settle(10);
    expect(committed).toEqual(['9']); // behind the high watermark: waits for the interval
    await loop.handler(batch(0, 20, 99, 100), ctl);
    await settle(10);
    expect(committed).toEqual(['9']); // caught up: sooner, but not at once
    await settle(150);
    expect(committed).toEqual(['9', '99']); // a tenth of the interval after the last commit, superseding 19
    expect(caughtUp).toEqual([false, false, true]);
  });

  it('a trickle (caught up, but not expedited) keeps the full interval: no commit per message', async () => {
    const proc = { process: async () => false } as unknown as SinkProcessor;
    const loop = new SinkConsumerLoop(proc, { commitIntervalMs: 300 });
    loop.onGroupJoin();
    const committed: string[] = [];
    const ctl = control(committed);
    for (let o = 0; o < 5; o++) {
      await loop.handler(batch(o % 2, o, o, o + 1), ctl);
      await settle(20);
    }
    expect(committed).toEqual(['0']); // the first at once, the rest wait for the interval
    await settle(300);
    expect(committed.slice(1).sort()).toEqual(['3', '4']);
  });

  it('a failed batch with later ones pipelined behind it: the partition is read again from the earliest failed batch', async () => {
    // Batches 0-9, 10-19, 20-29 of one partition, in flight together; the middle one fails first, then the first.
    const gates = [0, 1, 2].map(() => {
      let ok!: (v: boolean) => void, fail!: (e: Error) => void;
      const p = new Promise<boolean>((res, rej) => ((ok = res), (fail = rej)));
      return { p, ok, fail };
    });
    let n = 0;
    const proc = { process: () => gates[n++].p } as unknown as SinkProcessor;
    const seeks: string[] = [];
    const committed: string[] = [];
    const loop = new SinkConsumerLoop(proc, { commitIntervalMs: 0, seek: (_t, _p, o) => void seeks.push(o) });
    loop.onGroupJoin();
    const ctl = control(committed);
    await loop.handler(batch(0, 0, 9, 1000), ctl); // returns at once (pipelined)
    const second = loop.handler(batch(0, 10, 19, 1000), ctl).then(() => 'ok', (e: Error) => e.message);
    const third = loop.handler(batch(0, 20, 29, 1000), ctl).then(() => 'ok', (e: Error) => e.message);
    gates[1].fail(new Error('second failed'));
    gates[2].ok(false);
    await settle(10);
    expect(seeks).toEqual([]); // the first batch may still land: nothing decided yet
    gates[0].fail(new Error('first failed'));
    // The handlers report the original error (kafkajs sees the cause, not the loop's wrapper).
    expect(await second).toBe('first failed');
    expect(await third).toBe('first failed'); // its previous batch failed: kafkajs redoes the partition
    await loop.idle();
    await settle(10);
    expect(seeks).toEqual(['0']); // not 10 or 20: records 0-19 were never inserted
    expect(committed).toEqual([]);
  });

  it('a partition whose first batch fails alone is read again from that batch', async () => {
    let n = 0;
    const proc = { process: async () => (n++ === 0 ? Promise.reject(new Error('boom')) : false) } as unknown as SinkProcessor;
    const seeks: string[] = [];
    const committed: string[] = [];
    const loop = new SinkConsumerLoop(proc, { commitIntervalMs: 0, seek: (_t, _p, o) => void seeks.push(o) });
    loop.onGroupJoin();
    const ctl = control(committed);
    await loop.handler(batch(3, 40, 49, 1000), ctl);
    await loop.idle();
    expect(seeks).toEqual(['40']);
    await loop.handler(batch(3, 40, 49, 1000), ctl); // read again: lands and commits
    await loop.idle();
    await settle(10);
    expect(committed).toEqual(['49']);
  });
});
