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

const settle = () => new Promise((r) => setTimeout(r, 10));

describe('SinkConsumerLoop', () => {
  it('a batch that reaches the high watermark tells the processor and is committed without waiting for the interval', async () => {
    const caughtUp: boolean[] = [];
    const proc = { process: async (_m: InMessage[], c = false) => void caughtUp.push(c) } as unknown as SinkProcessor;
    const loop = new SinkConsumerLoop(proc, { commitIntervalMs: 60_000 });
    loop.onGroupJoin();
    const committed: string[] = [];
    const ctl = control(committed);
    await loop.handler(batch(0, 0, 9, 100), ctl);
    await settle();
    expect(committed).toEqual(['9']); // the first commit goes at once; the interval starts now
    await loop.handler(batch(0, 10, 19, 100), ctl);
    await settle();
    expect(committed).toEqual(['9']); // behind the high watermark: waits for the interval (a minute)
    await loop.handler(batch(0, 20, 99, 100), ctl);
    await settle();
    expect(committed).toEqual(['9', '99']); // caught up: committed as soon as it is in, superseding 19
    expect(caughtUp).toEqual([false, false, true]);
  });
});
