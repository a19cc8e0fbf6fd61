import { describe, expect, it } from 'vitest';
import { StageRunner, isMessageTooLarge, messageBytes, type StageOutput, type StageProcessor } from '../../../src/consumers/stage-runner.js';
import { StewardError } from '../../../src/errors.js';
import type { BatchControl, InMessage, KafkaAdapter, OutRecord, StewardConsumer, StewardProducer } from '../../../src/adapters/kafka/client.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { createLogger } from '../../../src/logger.js';
import { startedRunner } from './fixtures.js';

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
  const { handle: handler } = await startedRunner(proc, { producer, chunkSize: 2 });
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

/** A runner whose producer acknowledges at once, except sends the `refuse` predicate rejects (like the broker's MESSAGE_TOO_LARGE). */
async function autoSetup(proc: StageProcessor, refuse: (records: OutRecord[]) => unknown, maxMessageBytes?: number) {
  const sends: OutRecord[][] = [];
  const resolved: string[] = [];
  const producer: StewardProducer = {
    async send(records: OutRecord[]) {
      const err = refuse(records);
      if (err) throw err;
      sends.push(records);
    },
    async disconnect() {},
  };
  const metrics = new StewardMetrics();
  const { handle: handler } = await startedRunner(proc, { producer, metrics, chunkSize: 10, maxMessageBytes, nowMs: () => 7 });
  const ctl: BatchControl = { resolveOffset: (o) => void resolved.push(o), heartbeat: async () => undefined, isRunning: () => true, isStale: () => false, commit: async () => undefined };
  const run = (msgs: InMessage[]) => handler({ topic: 'in', partition: 0, highWatermark: String(msgs.length), messages: msgs }, ctl);
  const sent = () => sends.flatMap((rs) => rs.flatMap((r) => r.messages.map((m) => ({ topic: r.topic, m }))));
  return { run, sends, sent, resolved, metrics };
}

const tooLarge = () => Object.assign(new Error('produce failed: The request included a message larger than the max message size the server will accept'), {
  retryable: false,
  cause: Object.assign(new Error('The request included a message larger than the max message size the server will accept'), { type: 'MESSAGE_TOO_LARGE', retriable: false }),
});

describe('StageRunner with a processor that takes whole chunks (processChunk)', () => {
  it('the chunk call answers what it finished; the rest goes through process() after it, in key order, with retries and DLQ as ever; outputs stay in offset order', async () => {
    const calls: string[] = [];
    let failOnce = true;
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async processChunk(chunk) {
        calls.push(`chunk ${chunk.map((m) => m.offset).join(',')}`);
        // 1 and 3 (key b) left undone; 4 is malformed and left to process() too
        return chunk.map((m) => (['1', '3', '4'].includes(m.offset) ? undefined : [{ topic: 'out', message: { key: m.key, value: `c${m.offset}` } }]));
      },
      async process(m) {
        calls.push(`process ${m.offset}`);
        if (m.offset === '4') throw new StewardError('STEWARD_TRACE_SCHEMA', 'bad');
        if (m.offset === '1' && failOnce) {
          failOnce = false;
          throw new StewardError('STEWARD_STATE_UNAVAILABLE', 'redis', { retryable: true });
        }
        return [{ topic: 'out', message: { key: m.key, value: `p${m.offset}` } }];
      },
    };
    const { run, sent, resolved, metrics } = await autoSetup(proc, () => undefined);
    await run([msg(0, 'a'), msg(1, 'b'), msg(2, 'a'), msg(3, 'b'), msg(4, 'c')]);
    expect(calls).toEqual(['chunk 0,1,2,3,4', 'process 1', 'process 4', 'process 1', 'process 3']);
    expect(sent().map((s) => `${s.topic}:${String(s.m.value)}`)).toEqual(['out:c0', 'out:p1', 'out:c2', 'out:p3', 'dlq:v4']);
    expect(resolved).toEqual(['4']);
    const counts = Object.fromEntries((await metrics.messages.get()).values.map((v) => [v.labels.outcome, v.value]));
    expect(counts).toEqual({ ok: 4, retry: 1, dlq: 1 });
  }, 10_000);

  it('a chunk call that throws leaves the whole chunk to process()', async () => {
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async processChunk() {
        throw new Error('boom');
      },
      async process(m) {
        return [{ topic: 'out', message: { key: m.key, value: `p${m.offset}` } }];
      },
    };
    const { run, sent } = await autoSetup(proc, () => undefined);
    await run([msg(0, 'a'), msg(1, 'b')]);
    expect(sent().map((s) => String(s.m.value))).toEqual(['p0', 'p1']);
  });
});

describe('StageRunner: outputs a processChunk sends early (the gate\'s replies)', () => {
  it('leave while the chunk is still being processed; one whose send failed goes with the chunk\'s produce; the offset only after both', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async processChunk(chunk, _stop, sendNow) {
        // input 0 is answered early; input 1 too, but its early send fails; then the chunk waits (a slow judge wave)
        sendNow!(0, [{ topic: 'replies', message: { key: null, value: 'r0' } }]);
        sendNow!(1, [{ topic: 'replies', message: { key: null, value: 'r1' } }]);
        await held;
        return chunk.map((m) => [{ topic: 'out', message: { key: m.key, value: `c${m.offset}` } }]);
      },
      async process(m) {
        return [{ topic: 'out', message: { key: m.key, value: `p${m.offset}` } }];
      },
    };
    let refused = 0;
    const { run, sends, sent, resolved } = await autoSetup(proc, (records) => (records.some((r) => r.messages.some((m) => String(m.value) === 'r1')) && refused++ === 0 ? new Error('broker away') : undefined));
    const done = run([msg(0, 'a'), msg(1, 'b'), msg(2, 'c')]);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    // r0 is out before the chunk is done; nothing resolved yet
    expect(sent().map((s) => String(s.m.value))).toEqual(['r0']);
    expect(resolved).toEqual([]);
    release();
    await done;
    // r1 goes with the chunk's produce (records grouped by topic)
    expect(sends.map((rs) => rs.flatMap((r) => r.messages.map((m) => `${r.topic}:${String(m.value)}`)))).toEqual([['replies:r0'], ['out:c0', 'out:c1', 'out:c2', 'replies:r1']]);
    expect(resolved).toEqual(['2']);
  });
});

describe('StageRunner dead-lettering', () => {
  it('a dead-lettered input sends the processor\'s onDeadLetter outputs with its DLQ record', async () => {
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async process(m) {
        if (m.offset === '1') throw new StewardError('STEWARD_TRACE_SCHEMA', 'bad');
        return [{ topic: 'out', message: { key: m.key, value: `o${m.offset}` } }];
      },
      onDeadLetter: (m, err) => [{ topic: 'replies', message: { key: 'k', value: `rejected ${m.offset} ${err.code}` } }],
    };
    const { run, sent, resolved } = await autoSetup(proc, () => undefined);
    await run([msg(0, 'a'), msg(1, 'a'), msg(2, 'a')]);
    // One send per chunk, records grouped by topic.
    expect(sent().map((s) => `${s.topic}:${String(s.m.value)}`)).toEqual(['out:o0', 'out:o2', 'replies:rejected 1 STEWARD_TRACE_SCHEMA', 'dlq:v1']);
    expect(resolved).toEqual(['2']);
  });

  it('a DLQ record over max_message_bytes is cut: without the original value, then without its headers', async () => {
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async process() {
        throw new StewardError('STEWARD_TRACE_TOO_LARGE', 'too big');
      },
      onDeadLetter: () => [{ topic: 'replies', message: { key: 'k', value: 'x'.repeat(5000) } }], // over the limit: dropped
    };
    const { run, sent } = await autoSetup(proc, () => undefined, 2000);
    const big: InMessage = { ...msg(0, 'a'), value: Buffer.alloc(3000, 1) };
    const bigHeaders: InMessage = { ...msg(1, 'a'), value: Buffer.alloc(3000, 1), headers: { h: Buffer.alloc(3000, 2) } };
    await run([big, bigHeaders]);
    const out = sent();
    expect(out.map((s) => s.topic)).toEqual(['dlq', 'dlq']);
    expect(out[0].m.value).toBeNull();
    expect(out[0].m.headers!['x-steward-dropped']).toBe('value (3000 bytes)');
    expect(out[0].m.headers!['x-steward-error-code']).toBe('STEWARD_TRACE_TOO_LARGE');
    expect(out[1].m.value).toBeNull();
    expect(out[1].m.headers!.h).toBeUndefined();
    expect(out[1].m.headers!['x-steward-dropped']).toContain('original headers');
    expect(out.every((s) => messageBytes(s.m) <= 2000)).toBe(true);
  });

  it('a broker MESSAGE_TOO_LARGE never loops: the chunk is re-sent input by input and the refused input is dead-lettered', async () => {
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async process(m) {
        return [{ topic: 'out', message: { key: m.key, value: m.offset === '1' ? 'HUGE' : `o${m.offset}` } }];
      },
      onDeadLetter: (m, err) => [{ topic: 'replies', message: { key: 'k', value: `rejected ${m.offset} ${err.code}` } }],
    };
    const refuse = (rs: OutRecord[]) => (rs.some((r) => r.messages.some((m) => m.value === 'HUGE')) ? tooLarge() : undefined);
    const { run, sent, resolved, metrics } = await autoSetup(proc, refuse);
    await run([msg(0, 'a'), msg(1, 'b'), msg(2, 'a')]);
    const out = sent();
    expect(out.map((s) => `${s.topic}:${String(s.m.value)}`)).toEqual(['out:o0', 'replies:rejected 1 STEWARD_TRACE_TOO_LARGE', 'dlq:v1', 'out:o2']);
    expect(out[2].m.headers!['x-steward-error-message']).toContain('refused an output of this input as too large');
    expect(resolved).toEqual(['2']);
    expect((await metrics.dlq.get()).values.find((v) => v.labels.code === 'STEWARD_TRACE_TOO_LARGE')?.value).toBe(1);
  });

  it('even a refused DLQ record does not stall: a bare record, else the input is skipped', async () => {
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async process(m) {
        return [{ topic: 'out', message: { key: m.key, value: `o${m.offset}` } }];
      },
    };
    // The broker refuses every record carrying the original value v0 (output o0 too).
    const refuse = (rs: OutRecord[]) => (rs.some((r) => r.messages.some((m) => m.value === 'o0' || String(m.value) === 'v0')) ? tooLarge() : undefined);
    const { run, sent, resolved } = await autoSetup(proc, refuse);
    await run([msg(0, 'a'), msg(1, 'a')]);
    const out = sent();
    expect(out.map((s) => `${s.topic}:${String(s.m.value)}`)).toEqual(['dlq:null', 'out:o1']);
    expect(out[0].m.headers!['x-steward-dropped']).toContain('value (2 bytes)');
    expect(resolved).toEqual(['1']);
  });

  it('other send failures still fail the batch (redone), and isMessageTooLarge finds the type through causes only', async () => {
    expect(isMessageTooLarge(tooLarge())).toBe(true);
    expect(isMessageTooLarge({ type: 'RECORD_LIST_TOO_LARGE' })).toBe(true);
    expect(isMessageTooLarge(Object.assign(new Error('x'), { cause: { type: 'NOT_LEADER_FOR_PARTITION' } }))).toBe(false);
    expect(isMessageTooLarge(new Error('MESSAGE_TOO_LARGE mentioned in text only'))).toBe(false);
    const proc: StageProcessor = { stage: 'test', inputTopics: ['in'], process: async (m) => [{ topic: 'out', message: { value: `o${m.offset}` } }] };
    const { run, resolved } = await autoSetup(proc, () => new Error('broker down'));
    await expect(run([msg(0, 'a')])).rejects.toThrow('broker down');
    expect(resolved).toEqual([]);
  });
});

describe('StageRunner when kafkajs gives a consumer up', () => {
  /** An adapter handing out fresh fake consumers; each remembers its crash listener and what was called on it. */
  function crashingAdapter() {
    const made: { crash: (err: Error, willRestart: boolean) => void; calls: string[] }[] = [];
    const adapter = {
      consumer: () => {
        const rec = { crash: (_e: Error, _r: boolean) => undefined as void, calls: [] as string[] };
        made.push(rec);
        const c: StewardConsumer = {
          async subscribe() {
            rec.calls.push('subscribe');
          },
          async runBatches() {
            rec.calls.push('run');
          },
          seek() {},
          async stop() {
            rec.calls.push('stop');
          },
          async disconnect() {
            rec.calls.push('disconnect');
          },
          onCrash(fn) {
            rec.crash = fn;
          },
          onGroupJoin() {},
        };
        return c;
      },
    } as unknown as KafkaAdapter;
    return { adapter, made };
  }
  const proc: StageProcessor = { stage: 'test', inputTopics: ['in'], process: async () => [] };
  const producer: StewardProducer = { send: async () => undefined, async disconnect() {} };
  const opts = (adapter: KafkaAdapter) => ({ adapter, producer, groupId: 'g', dlqTopic: 'dlq', metrics: new StewardMetrics(), logger: createLogger({ level: 'silent' }), restartDelayMs: 5 });
  const settle = () => new Promise((r) => setTimeout(r, 60));

  it('replaces a consumer that crashed without restart; a crash kafkajs restarts itself is left alone', async () => {
    const { adapter, made } = crashingAdapter();
    const runner = new StageRunner(proc, opts(adapter));
    await runner.start();
    made[0]!.crash(new Error('retriable, kafkajs restarts'), true);
    await settle();
    expect(made).toHaveLength(1);
    made[0]!.crash(new Error('Number of retries exceeded'), false);
    await settle();
    expect(made).toHaveLength(2);
    expect(made[0]!.calls).toEqual(['subscribe', 'run', 'disconnect']);
    expect(made[1]!.calls).toEqual(['subscribe', 'run']);
    await runner.stop();
    expect(made[1]!.calls).toEqual(['subscribe', 'run', 'stop', 'disconnect']);
  });

  it('does not restart after stop()', async () => {
    const { adapter, made } = crashingAdapter();
    const runner = new StageRunner(proc, opts(adapter));
    await runner.start();
    made[0]!.crash(new Error('gone'), false);
    await runner.stop();
    await settle();
    expect(made).toHaveLength(1);
  });
});

describe('StageRunner and rebalances', () => {
  it('a retry loop (Redis down) ends when the heartbeat reports a rebalance: the finished prefix is sent and resolved, the rest is left', async () => {
    let rebalancing = false;
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async process(m: InMessage): Promise<StageOutput[]> {
        if (m.offset === '2') throw new StewardError('STEWARD_STATE_UNAVAILABLE', 'redis down', { retryable: true });
        return [{ topic: 'out', message: { key: m.key, value: `o${m.offset}` } }];
      },
    };
    const sends: string[] = [];
    const producer: StewardProducer = { async send(rs) { sends.push(...rs.flatMap((r) => r.messages.map((x) => String(x.value)))); }, async disconnect() {} };
    const { handle } = await startedRunner(proc, { producer, chunkSize: 10, retry: { initialMs: 1, maxMs: 2 } });
    const resolved: string[] = [];
    let beats = 0;
    const ctl: BatchControl = {
      resolveOffset: (o) => void resolved.push(o),
      heartbeat: async () => {
        beats++;
        if (rebalancing) throw Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS' });
      },
      isRunning: () => true,
      isStale: () => false,
      commit: async () => undefined,
    };
    // One agent: offsets 0..3 in order, 2 fails until the rebalance.
    const done = handle({ topic: 'in', partition: 0, highWatermark: '4', messages: [0, 1, 2, 3].map((o) => msg(o, 'a')) }, ctl);
    while (beats < 3) await new Promise((r) => setTimeout(r, 2));
    expect(resolved).toEqual([]);
    rebalancing = true;
    await done; // returns (does not retry forever), so kafkajs can rejoin
    expect(sends).toEqual(['o0', 'o1']);
    expect(resolved).toEqual(['1']); // 2 and 3 are read again by whoever owns the partition next
  });

  it('a whole-chunk processor is told to stop on a rebalance: what it finished is sent, what it left is not processed', async () => {
    let rebalancing = false;
    const processed: string[] = [];
    const proc: StageProcessor = {
      stage: 'test',
      inputTopics: ['in'],
      async processChunk(chunk, shouldStop) {
        // The first slice (0, 1) is finished; the rest waits for the stop a slow judge would have run into.
        const out: (StageOutput[] | undefined)[] = chunk.map((m) => (['0', '1'].includes(m.offset) ? [{ topic: 'out', message: { key: m.key, value: `c${m.offset}` } }] : undefined));
        const t0 = Date.now();
        while (!shouldStop?.() && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
        return out;
      },
      async process(m) {
        processed.push(m.offset);
        return [{ topic: 'out', message: { key: m.key, value: `p${m.offset}` } }];
      },
    };
    const sends: string[] = [];
    const producer: StewardProducer = { async send(rs) { sends.push(...rs.flatMap((r) => r.messages.map((x) => String(x.value)))); }, async disconnect() {} };
    const { handle } = await startedRunner(proc, { producer, chunkSize: 10 });
    const resolved: string[] = [];
    const ctl: BatchControl = {
      resolveOffset: (o) => void resolved.push(o),
      heartbeat: async () => {
        if (rebalancing) throw Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS' });
      },
      isRunning: () => true,
      isStale: () => false,
      commit: async () => undefined,
    };
    const t0 = Date.now();
    const done = handle({ topic: 'in', partition: 0, highWatermark: '4', messages: [0, 1, 2, 3].map((o) => msg(o, 'a')) }, ctl);
    await new Promise((r) => setTimeout(r, 50));
    rebalancing = true;
    await done;
    expect(Date.now() - t0).toBeLessThan(9_000); // stopped by the heartbeat's report, not by the processor's own limit
    expect(sends).toEqual(['c0', 'c1']);
    expect(processed).toEqual([]);
    expect(resolved).toEqual(['1']);
  }, 15_000);

  it("isRebalance: only the group's rebalance and generation errors count", async () => {
    const { isRebalance } = await import('../../../src/adapters/kafka/kafka-error.js');
    expect(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR_FOR_GROUP'].every((type) => isRebalance({ type }))).toBe(true);
    expect(isRebalance(new Error('socket hang up'))).toBe(false);
    expect(isRebalance({ type: 'REQUEST_TIMED_OUT' })).toBe(false);
  });
});
