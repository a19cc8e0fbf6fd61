import { describe, expect, it } from 'vitest';
import { StageRunner, type StageOutput, type StageProcessor } from '../../../src/consumers/common.js';
import type { BatchControl, InBatch, InMessage, KafkaAdapter, OutRecord, StewardConsumer, StewardProducer } from '../../../src/adapters/kafka/client.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { createLogger } from '../../../src/logger.js';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const msg = (offset: number, key: string): InMessage => ({ topic: 'in', partition: 0, offset: String(offset), key: Buffer.from(key), value: Buffer.from(`v${offset}`), headers: {}, timestampMs: 0 });

/** A runner over fakes: the test drives batches and acknowledges each send by hand; `log` records the order of events. */
async function setup() {
  const log: string[] = [];
  const acks: ReturnType<typeof deferred>[] = [];
  let handler!: (b: InBatch, ctl: BatchControl) => Promise<void>;
  const consumer: StewardConsumer = {
    async subscribe() {},
    async runBatches(h) {
      handler = h;
    },
    seek() {},
    async stop() {},
    async disconnect() {},
    onCrash() {},
    onGroupJoin() {},
  };
  const producer: StewardProducer = {
    send(records: OutRecord[]) {
      log.push(`send ${records.flatMap((r) => r.messages.map((m) => String(m.value))).join(',')}`);
      const d = deferred();
      acks.push(d);
      return d.promise.then(() => {
        log.push(`acked ${acks.indexOf(d)}`);
      });
    },
    async disconnect() {},
  };
  const proc: StageProcessor = {
    stage: 'test',
    inputTopics: ['in'],
    async process(m: InMessage): Promise<StageOutput[]> {
      log.push(`process ${m.offset}`);
      await new Promise((r) => setImmediate(r));
      return [{ topic: 'out', message: { key: m.key, value: `o${m.offset}` } }];
    },
  };
  const runner = new StageRunner(proc, {
    adapter: { consumer: () => consumer } as unknown as KafkaAdapter,
    producer,
    groupId: 'g',
    dlqTopic: 'dlq',
    metrics: new StewardMetrics(),
    logger: createLogger({ level: 'silent' }),
    chunkSize: 2,
  });
  await runner.start();
  const ctl: BatchControl = {
    resolveOffset: (o) => log.push(`resolve ${o}`),
    heartbeat: async () => undefined,
    isRunning: () => true,
    isStale: () => false,
    commit: async () => undefined,
  };
  const run = (msgs: InMessage[]) => handler({ topic: 'in', partition: 0, highWatermark: String(msgs.length), messages: msgs }, ctl);
  const until = async (pred: () => boolean) => {
    for (let i = 0; i < 1000 && !pred(); i++) await new Promise((r) => setImmediate(r));
    expect(pred()).toBe(true);
  };
  return { log, acks, run, until };
}

describe('StageRunner chunk pipelining', () => {
  it('processes the next chunk while the previous send is unacknowledged; sends and offsets stay in order, offsets only after the ack', async () => {
    const { log, acks, run, until } = await setup();
    const done = run([msg(0, 'a'), msg(1, 'b'), msg(2, 'a'), msg(3, 'b'), msg(4, 'a')]);
    // chunk 0 sent; chunk 1 processed meanwhile, but not sent before chunk 0 is acknowledged
    await until(() => log.includes('process 3'));
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['process 0', 'process 1', 'send o0,o1', 'process 2', 'process 3']);
    acks[0].resolve();
    await until(() => acks.length === 2);
    expect(log.slice(5)).toEqual(['acked 0', 'resolve 1', 'send o2,o3', 'process 4']);
    acks[1].resolve();
    await until(() => acks.length === 3);
    acks[2].resolve();
    await done;
    expect(log.slice(9)).toEqual(['acked 1', 'resolve 3', 'send o4', 'acked 2', 'resolve 4']);
  });

  it('a failed send fails the batch: its offsets are never resolved and later chunks are not sent', async () => {
    const { log, acks, run, until } = await setup();
    const done = run([msg(0, 'a'), msg(1, 'b'), msg(2, 'a'), msg(3, 'b')]);
    await until(() => log.includes('process 3'));
    acks[0].reject(new Error('broker down'));
    await expect(done).rejects.toThrow('broker down');
    expect(log.filter((l) => l.startsWith('send') || l.startsWith('resolve'))).toEqual(['send o0,o1']);
  });
});
