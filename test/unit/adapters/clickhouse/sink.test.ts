import { describe, expect, it } from 'vitest';
import { StewardError } from '../../../../src/errors.js';
import { ClickHouseSink, type PoisonRow, type SinkTarget } from '../../../../src/adapters/clickhouse/sink.js';

/** An in-memory table that behaves like an insert endpoint: all-or-nothing per batch. */
class MemoryTarget implements SinkTarget {
  batches: { table: string; rows: object[] }[] = [];
  failures = 0; // next N inserts fail with a retryable error
  async insert(table: string, rows: readonly object[]): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new StewardError('STEWARD_CLICKHOUSE', 'connect ECONNREFUSED', { retryable: true });
    }
    if (rows.some((r) => (r as { bad?: boolean }).bad))
      throw new StewardError('STEWARD_CLICKHOUSE', 'Code: 27. Cannot parse input', { retryable: false });
    this.batches.push({ table, rows: [...rows] });
  }
  ids(table?: string): number[] {
    return this.batches.filter((b) => !table || b.table === table).flatMap((b) => b.rows.map((r) => (r as { id: number }).id));
  }
}

const items = (from: number, n: number, bad: number[] = []) =>
  Array.from({ length: n }, (_, i) => ({ row: { id: from + i, ...(bad.includes(from + i) ? { bad: true } : {}) }, source: `msg-${from + i}` }));

const noSleep = { sleep: async () => {}, random: () => 0.5 };

describe('ClickHouseSink', () => {
  it('batches by size: a full buffer is inserted in batches of maxRows', async () => {
    const t = new MemoryTarget();
    const sink = new ClickHouseSink(t, { maxRows: 3, maxDelayMs: 60_000, onPoison: async () => {} });
    await sink.write('decisions', items(1, 7));
    expect(t.batches.map((b) => b.rows.length)).toEqual([3, 3, 1]);
    expect(t.ids()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('tells onInserted of every successful insert: table, rows and the duration of its last attempt', async () => {
    const t = new MemoryTarget();
    const seen: [string, number, number][] = [];
    const sink = new ClickHouseSink(t, { maxRows: 3, maxDelayMs: 60_000, onPoison: async () => {}, onInserted: (table, rows, s) => void seen.push([table, rows, s]) });
    await sink.write('decisions', items(1, 5));
    expect(seen.map(([table, rows]) => [table, rows])).toEqual([['decisions', 3], ['decisions', 2]]);
    expect(seen.every(([, , s]) => s >= 0 && s < 5)).toBe(true);
  });

  it('batches by time: a partial buffer waits for maxDelayMs, then goes', async () => {
    const t = new MemoryTarget();
    const sink = new ClickHouseSink(t, { maxRows: 100, maxDelayMs: 40, onPoison: async () => {} });
    const p = sink.write('decisions', items(1, 2));
    await new Promise((r) => setTimeout(r, 5));
    expect(t.batches).toHaveLength(0);
    await p;
    expect(t.ids()).toEqual([1, 2]);
  });

  it('expedite (the source caught up): a partial buffer of expediteRows or more goes at once, a smaller one still lingers', async () => {
    const t = new MemoryTarget();
    const sink = new ClickHouseSink(t, { maxRows: 100, maxDelayMs: 60_000, expediteRows: 5, onPoison: async () => {} });
    void sink.write('decisions', items(1, 3), true);
    await new Promise((r) => setTimeout(r, 5));
    expect(t.batches).toHaveLength(0); // 3 < expediteRows: waits for more, or for maxDelayMs
    void sink.write('decisions', items(4, 1));
    await new Promise((r) => setTimeout(r, 5));
    expect(t.batches).toHaveLength(0); // 4 buffered, but this write did not say it caught up
    await sink.write('decisions', items(5, 2), true); // 6 >= 5: sent now, not after a minute
    expect(t.batches.map((b) => b.rows.length)).toEqual([6]);
  });

  it('resolves a write only after its rows were inserted (the caller commits offsets then)', async () => {
    const t = new MemoryTarget();
    const sink = new ClickHouseSink(t, { maxRows: 100, maxDelayMs: 10, onPoison: async () => {} });
    let done = false;
    const p = sink.write('verdicts', items(1, 2)).then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    expect(t.batches).toHaveLength(0);
    await p;
    expect(t.ids('verdicts')).toEqual([1, 2]);
  });

  it('keeps tables apart and coalesces concurrent writers into one insert per table', async () => {
    const t = new MemoryTarget();
    const sink = new ClickHouseSink(t, { maxRows: 100, maxDelayMs: 10, onPoison: async () => {} });
    await Promise.all([sink.write('a', items(1, 2)), sink.write('b', items(10, 1)), sink.write('a', items(3, 2))]);
    expect(t.batches).toEqual([
      { table: 'a', rows: [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }] },
      { table: 'b', rows: [{ id: 10 }] },
    ]);
  });

  it('retries with exponential backoff while the server is down, then inserts each row once', async () => {
    const t = new MemoryTarget();
    t.failures = 4;
    const delays: number[] = [];
    const sink = new ClickHouseSink(t, {
      maxRows: 10,
      maxDelayMs: 0,
      retry: { initialMs: 100, maxMs: 500 },
      onPoison: async () => {},
      onRetry: (_e, _a, d) => delays.push(d),
      ...noSleep,
    });
    await sink.write('decisions', items(1, 5));
    expect(t.ids()).toEqual([1, 2, 3, 4, 5]);
    expect(delays).toEqual([75, 150, 300, 375]); // jitter 0.5 of min(500, 100·2^n)
    expect(sink.stats).toMatchObject({ retries: 4, inserted: 5, poison: 0 });
  });

  it('isolates poison rows by bisection: the good rows land, the bad ones go to the DLQ callback with their source', async () => {
    const t = new MemoryTarget();
    const dlq: PoisonRow[] = [];
    const sink = new ClickHouseSink(t, { maxRows: 16, maxDelayMs: 0, onPoison: async (p) => void dlq.push(...p) });
    await sink.write('decisions', items(1, 16, [4, 13]));
    expect(t.ids().sort((a, b) => a - b)).toEqual([1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16]);
    expect(dlq.map((p) => p.source)).toEqual(['msg-4', 'msg-13']);
    expect(dlq[0].error.code).toBe('STEWARD_CLICKHOUSE');
    expect(sink.stats.poison).toBe(2);
  });

  it('retries the DLQ callback when it fails, and never drops the poison row', async () => {
    const t = new MemoryTarget();
    let calls = 0;
    const got: unknown[] = [];
    const sink = new ClickHouseSink(t, {
      maxRows: 4,
      maxDelayMs: 0,
      onPoison: async (p) => {
        if (++calls < 3) throw new StewardError('STEWARD_KAFKA', 'broker down', { retryable: true });
        got.push(...p.map((x) => x.source));
      },
      ...noSleep,
    });
    await sink.write('t', items(1, 4, [2]));
    expect(got).toEqual(['msg-2']);
    expect(calls).toBe(3);
  });

  it('abort rejects writes still waiting for a server that does not come back', async () => {
    const t = new MemoryTarget();
    t.failures = Number.POSITIVE_INFINITY;
    const sink = new ClickHouseSink(t, { maxRows: 10, maxDelayMs: 0, retry: { initialMs: 5, maxMs: 5 }, onPoison: async () => {} });
    const p = sink.write('t', items(1, 3));
    await new Promise((r) => setTimeout(r, 30));
    sink.abort('shutting down');
    await expect(p).rejects.toMatchObject({ code: 'STEWARD_CLICKHOUSE', retryable: true });
    await expect(sink.write('t', items(4, 1))).rejects.toThrow(/shutting down/);
    expect(t.batches).toHaveLength(0);
  });

  it('flush() inserts without waiting for the timer', async () => {
    const t = new MemoryTarget();
    const sink = new ClickHouseSink(t, { maxRows: 1000, maxDelayMs: 60_000, onPoison: async () => {} });
    const p = sink.write('t', items(1, 3));
    await sink.flush();
    await p;
    expect(t.ids()).toEqual([1, 2, 3]);
  });

  it('keeps up to maxInFlight inserts per table running; a write resolves only when all of its rows are in', async () => {
    const gates: (() => void)[] = [];
    const seen: number[][] = [];
    const t: SinkTarget = {
      insert: (_table, rows) => {
        seen.push(rows.map((r) => (r as { id: number }).id));
        return new Promise<void>((r) => gates.push(r));
      },
    };
    const sink = new ClickHouseSink(t, { maxRows: 2, maxDelayMs: 60_000, onPoison: async () => {} });
    let done = false;
    const p = sink.write('t', items(1, 6)).then(() => (done = true));
    await Promise.resolve();
    expect(seen).toEqual([[1, 2], [3, 4]]); // two in flight, the third batch waits
    gates.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual([[1, 2], [3, 4], [5, 6]]);
    gates.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
    expect(done).toBe(false);
    gates.shift()?.();
    await p;
    expect(done).toBe(true);
  });

  it('encoded fast path: rows serialised once per write, never again; parts concatenated in order; a rejected batch is bisected by line', async () => {
    const bodies: string[] = [];
    const encodedAt: number[] = [];
    const t: SinkTarget = {
      insert: async () => {
        throw new Error('object path must not be used');
      },
      // One line per row, like the store's TSV encoder.
      encodeRows: (_table, rows) => {
        encodedAt.push(rows.length);
        return rows.map((r) => `${JSON.stringify(r)}\n`).join('');
      },
      insertEncoded: async (_table, parts) => {
        const body = parts.join('');
        const rows = body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: number; bad?: boolean });
        if (rows.some((r) => r.bad)) throw new StewardError('STEWARD_CLICKHOUSE', 'Code: 27. Cannot parse input', { retryable: false });
        bodies.push(body);
      },
    };
    const dlq: PoisonRow[] = [];
    const sink = new ClickHouseSink(t, { maxRows: 8, maxDelayMs: 5, onPoison: async (p) => void dlq.push(...p) });
    await Promise.all([sink.write('t', items(1, 3)), sink.write('t', items(4, 3, [5]))]);
    // Each write encoded at once, as a whole, and not again for the bisection: the rows are not kept.
    expect(encodedAt).toEqual([3, 3]);
    expect(dlq.map((p) => p.source)).toEqual(['msg-5']);
    expect(dlq[0]).toMatchObject({ row: undefined, line: '{"id":5,"bad":true}\n' });
    const ids = bodies.flatMap((b) => b.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { id: number }).id));
    expect(ids.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 6]);
    expect(sink.stats.poison).toBe(1);
  });

  it('writeEncoded: bytes go as they are, mixed with encoded text; a rejected batch is bisected by line into text poison', async () => {
    const bodies: string[] = [];
    const t: SinkTarget = {
      insert: async () => {
        throw new Error('object path must not be used');
      },
      encodeRows: (_table, rows) => rows.map((r) => `${JSON.stringify(r)}\n`).join(''),
      insertEncoded: async (_table, parts) => {
        const body = parts.map((p) => (typeof p === 'string' ? p : Buffer.from(p).toString('utf8'))).join('');
        if (body.includes('"bad"')) throw new StewardError('STEWARD_CLICKHOUSE', 'Code: 27. Cannot parse input', { retryable: false });
        bodies.push(body);
      },
    };
    const dlq: PoisonRow[] = [];
    const sink = new ClickHouseSink(t, { maxRows: 8, maxDelayMs: 5, onPoison: async (p) => void dlq.push(...p) });
    expect(sink.encodesLines).toBe(true);
    const bytes = Buffer.from('{"id":10}\n{"id":11,"bad":true}\n{"id":"ü12"}\n');
    await Promise.all([sink.writeEncoded('t', bytes, ['m-10', 'm-11', 'm-12']), sink.write('t', items(1, 2))]);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({ source: 'm-11', row: undefined, line: '{"id":11,"bad":true}\n' });
    expect(bodies.join('').split('\n').filter(Boolean).sort()).toEqual(['{"id":"ü12"}', '{"id":10}', '{"id":1}', '{"id":2}']);
    expect(sink.stats).toMatchObject({ inserted: 4, poison: 1 });
    // A target without the encoded path cannot take bytes: the write fails (its offsets stay uncommitted).
    const plain = new ClickHouseSink({ insert: async () => {} }, { onPoison: async () => {} });
    expect(plain.encodesLines).toBe(false);
    await expect(plain.writeEncoded('t', bytes, [1, 2, 3])).rejects.toMatchObject({ code: 'STEWARD_INTERNAL' });
  });

  it('encoded fast path: a target that breaks one-line-per-row fails the write (offsets stay uncommitted) instead of guessing', async () => {
    const t: SinkTarget = {
      insert: async () => {},
      encodeRows: (_table, rows) => `${rows.map((r) => JSON.stringify(r)).join(' ')}\n`,
      insertEncoded: async () => {
        throw new StewardError('STEWARD_CLICKHOUSE', 'Code: 27. Cannot parse input', { retryable: false });
      },
    };
    const dlq: PoisonRow[] = [];
    const sink = new ClickHouseSink(t, { maxRows: 8, maxDelayMs: 0, onPoison: async (p) => void dlq.push(...p) });
    await expect(sink.write('t', items(1, 3))).rejects.toMatchObject({ code: 'STEWARD_INTERNAL', retryable: false });
    expect(dlq).toEqual([]);
  });
});
