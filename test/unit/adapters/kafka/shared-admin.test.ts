// The join's trace readers' shared broker questions (src/adapters/kafka/shared-admin.ts, review F3 finding 1): reads
// asking at once share one question; an answer a read would act on ("past the end", "no such partition") from a
// question asked before that read came is asked again (it may predate the trace); a hanging question is let go of.
import { describe, expect, it } from 'vitest';
import type { KafkaAdapter } from '../../../../src/adapters/kafka/client.js';
import type { StewardAdmin } from '../../../../src/adapters/kafka/kafka-types.js';
import { SharedAdmin, SharedQuestion, timeBoxed } from '../../../../src/adapters/kafka/shared-admin.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const p = new Promise<T>((r) => (resolve = r));
  return { p, resolve };
}

describe('SharedQuestion', () => {
  it('one question for the callers asking meanwhile; a joined caller whose answer it would act on asks again', async () => {
    const answers = [deferred<number>(), deferred<number>(), deferred<number>()];
    let asked = 0;
    const q = new SharedQuestion(() => answers[asked++]!.p);
    const first = q.get((end) => 10 >= end); // started the question: its answer is fresh for it
    const joined = q.get((end) => 12 >= end); // came later: a "past" (12 >= 11) from the older question is re-asked
    const joinedNotPast = q.get((end) => 3 >= end);
    answers[0]!.resolve(11);
    expect(await first).toBe(11);
    expect(await joinedNotPast).toBe(11);
    expect(asked).toBe(2);
    answers[1]!.resolve(13);
    expect(await joined).toBe(13);
    // Nothing in flight: a new caller asks anew.
    const again = q.get(() => true);
    expect(asked).toBe(3);
    answers[2]!.resolve(14);
    expect(await again).toBe(14);
  });

  it('a failed question fails its callers and is forgotten', async () => {
    let asked = 0;
    const q = new SharedQuestion<number>(async () => {
      asked++;
      if (asked === 1) throw new Error('broker away');
      return 4;
    });
    await expect(Promise.all([q.get(() => false), q.get(() => false)])).rejects.toThrow(/broker away/);
    expect(await q.get(() => false)).toBe(4);
    expect(asked).toBe(2);
  });
});

describe('SharedAdmin', () => {
  it('connects once for many questions, reconnects after a failed one, and closes its client', async () => {
    let connects = 0;
    let disconnects = 0;
    let fail = false;
    const adapter = {
      admin: async () => {
        connects++;
        return {
          topicOffsets: async () => {
            if (fail) throw new Error('connection lost');
            return [{ partition: 0, high: '7', low: '0' }];
          },
          disconnect: async () => void disconnects++,
        } as unknown as StewardAdmin;
      },
    } as unknown as KafkaAdapter;
    const a = new SharedAdmin(adapter);
    expect(await Promise.all([a.partitionEnd('t', 0, 1000), a.partitionEnd('t', 0, 1000), a.partitionEnd('t', 1, 1000)])).toEqual([7n, 7n, undefined]);
    expect(connects).toBe(1);
    fail = true;
    expect(await a.partitionEnd('t', 0, 1000)).toBeUndefined();
    fail = false;
    expect(await a.partitionEnd('t', 0, 1000)).toBe(7n);
    expect(connects).toBe(2);
    await a.close();
    expect(disconnects).toBe(2);
    await expect(a.use(async () => 1)).rejects.toThrow(/closed/);
  });

  it('a question that hangs answers "not known" after its time box', async () => {
    const a = new SharedAdmin({ admin: async () => ({ topicOffsets: () => new Promise(() => undefined), disconnect: async () => undefined }) } as unknown as KafkaAdapter);
    const t0 = Date.now();
    expect(await a.partitionEnd('t', 0, 50)).toBeUndefined();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(await timeBoxed(new Promise<number>(() => undefined), 10, -1)).toBe(-1);
    await a.close();
  });
});
