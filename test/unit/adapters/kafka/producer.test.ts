import { describe, expect, it } from 'vitest';
import type { OutRecord } from '../../../../src/adapters/kafka/client.js';
import { coalescingProducer } from '../../../../src/adapters/kafka/coalescing-producer.js';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A producer over a fake request sender: each request recorded in `calls`, acknowledged by hand through `acks`. */
function recorded(maxRequestBytes?: number, o?: { turn?: boolean }) {
  const calls: OutRecord[][] = [];
  const acks: ReturnType<typeof deferred>[] = [];
  const p = coalescingProducer(
    (tm) => {
      calls.push(tm);
      const d = deferred();
      acks.push(d);
      return d.promise;
    },
    async () => undefined,
    maxRequestBytes,
    o,
  );
  return { p, calls, acks };
}

const rec = (topic: string, ...values: string[]): OutRecord => ({ topic, messages: values.map((value) => ({ key: 'k', value })) });
const flat = (calls: OutRecord[][]) => calls.map((c) => c.map((r) => `${r.topic}:${r.messages.map((m) => m.value).join(',')}`));

describe('coalescingProducer', () => {
  it('sends at once when idle; sends made while a request is in flight go together next, in call order', async () => {
    const { p, calls, acks } = recorded();
    const done: string[] = [];
    const s1 = p.send([rec('a', '1'), rec('b', 'x')]).then(() => done.push('s1'));
    const s2 = p.send([rec('a', '2')]).then(() => done.push('s2'));
    const s3 = p.send([rec('b', 'y'), rec('a', '3')]).then(() => done.push('s3'));
    expect(flat(calls)).toEqual([['a:1', 'b:x']]);
    acks[0].resolve();
    await s1;
    expect(done).toEqual(['s1']);
    expect(flat(calls)).toEqual([['a:1', 'b:x'], ['a:2,3', 'b:y']]);
    acks[1].resolve();
    await Promise.all([s2, s3]);
    expect(done).toEqual(['s1', 's2', 's3']);
  });

  it('turn: an idle producer sends the turn\'s sends as one request at the turn\'s end; one in flight still merges the next', async () => {
    const { p, calls, acks } = recorded(undefined, { turn: true });
    const s1 = p.send([rec('a', '1')]);
    const s2 = p.send([rec('a', '2'), rec('b', 'x')]);
    expect(calls).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(flat(calls)).toEqual([['a:1,2', 'b:x']]);
    const s3 = p.send([rec('a', '3')]);
    await new Promise((r) => setImmediate(r));
    // In flight: s3 waits for the request, then goes at once.
    expect(calls).toHaveLength(1);
    acks[0].resolve();
    await Promise.all([s1, s2]);
    expect(flat(calls)).toEqual([['a:1,2', 'b:x'], ['a:3']]);
    acks[1].resolve();
    await s3;
  });

  it('a failed request rejects every send merged into it; later sends go out afterwards', async () => {
    const { p, calls, acks } = recorded();
    const s1 = p.send([rec('a', '1')]);
    const s2 = p.send([rec('a', '2')]);
    const s3 = p.send([rec('a', '3')]);
    acks[0].resolve();
    await s1;
    acks[1].reject(Object.assign(new Error('broker down'), { retriable: true }));
    await expect(s2).rejects.toMatchObject({ code: 'STEWARD_KAFKA', retryable: true });
    await expect(s3).rejects.toThrow('broker down');
    const s4 = p.send([rec('a', '4')]);
    expect(flat(calls)).toEqual([['a:1'], ['a:2,3'], ['a:4']]);
    acks[2].resolve();
    await s4;
  });

  it('records without messages are not sent', async () => {
    const calls: OutRecord[][] = [];
    const p = coalescingProducer(
      async (tm) => {
        calls.push(tm);
      },
      async () => undefined,
    );
    await p.send([rec('a')]);
    expect(calls).toEqual([]);
  });
});

describe('coalescingProducer size bound', () => {
  it('merges queued sends only up to the byte bound; a larger send goes alone; order is kept', async () => {
    const { p, calls, acks } = recorded(10);
    const sends = [p.send([rec('a', '0')]), p.send([rec('a', '1111')]), p.send([rec('a', '2222')]), p.send([rec('a', '333333333333')]), p.send([rec('a', '4')])];
    for (let i = 0; i < 4; i++) {
      acks[i].resolve();
      await sends[i === 0 ? 0 : i === 1 ? 2 : i === 2 ? 3 : 4];
    }
    await Promise.all(sends);
    // key 'k' counts 1 byte: '1111'+'2222' = 10 fit together; the 13-byte send goes alone
    expect(flat(calls)).toEqual([['a:0'], ['a:1111,2222'], ['a:333333333333'], ['a:4']]);
  });
});

describe('coalescingProducer splitting', () => {
  it('splits a send larger than the bound into ordered requests and resolves once all are acknowledged', async () => {
    const { p, calls, acks } = recorded(10);
    let settled = false;
    const s = p.send([rec('a', '1111', '2222', '3333'), rec('b', '55')]).then(() => (settled = true));
    acks[0].resolve();
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    acks[1].resolve();
    await s;
    expect(flat(calls)).toEqual([['a:1111,2222'], ['a:3333', 'b:55']]);
  });

  it('after a failed piece, the rest of that send is not sent; other sends go on', async () => {
    const { p, calls, acks } = recorded(10);
    const big = p.send([rec('a', '1111', '2222', '3333', '4444', '5555')]);
    acks[0].reject(new Error('broker down'));
    await expect(big).rejects.toThrow('broker down');
    const other = p.send([rec('b', 'x')]);
    expect(flat(calls)).toEqual([['a:1111,2222'], ['b:x']]);
    acks[1].resolve();
    await other;
  });
});
