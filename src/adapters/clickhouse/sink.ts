/**
 * ClickHouseSink: the sink stage's core, independent of Kafka. Rows are buffered per table and inserted in
 * batches (by size, or after maxDelayMs). `write()` resolves only once its rows are durably inserted or
 * dead-lettered, so a consumer that awaits it before committing offsets never loses a row.
 *
 * Failures: retryable errors (ClickHouse down, timeouts, too many parts) are retried with exponential
 * backoff for as long as it takes; a non-retryable (data) error makes the batch bisect until the poison rows
 * are isolated, and those go to `onPoison` (the DLQ) while the rest is inserted. A failure of the endpoint itself
 * (a 404 or 401 from something in front of ClickHouse: spec-decisions D31) rejects the batch unbisected: a
 * misconfiguration must not dead-letter every row.
 */
import { StewardError, isRetryable } from '../../errors.js';
import { isEndpointFailure } from './client.js';
import type { PoisonRow, SinkItem, SinkOptions, SinkStats, SinkTarget } from './sink-types.js';

export type { PoisonRow, SinkItem, SinkOptions, SinkStats, SinkTarget } from './sink-types.js';

interface Waiter {
  /** Segments of this write not yet inserted or dead-lettered. */
  remaining: number;
  resolve(): void;
  reject(e: unknown): void;
}

/**
 * Part of one write() (at most maxRows rows), serialised once at write time when the target can. Then only
 * the text and the sources are kept: the row objects die young instead of surviving until the insert is
 * acknowledged (under backlog ~24 000 rows of ~30 fields each were promoted by every scavenge).
 */
interface Segment {
  count: number;
  /** Without the encoded fast path: the items as written. */
  items: readonly SinkItem[] | undefined;
  /** With it: the rows as `target.encodeRows` made them or as writeEncoded got them (one line each), and their sources in order. */
  body: string | Buffer | undefined;
  sources: readonly unknown[] | undefined;
  waiter: Waiter;
}

/** One row while a rejected batch is bisected: the object, or its encoded line. */
interface Unit {
  row?: object;
  line?: string | Buffer;
  source?: unknown;
}

interface TableState {
  segments: Segment[];
  rows: number;
  inFlight: number;
  timer: NodeJS.Timeout | undefined;
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ClickHouseSink {
  private readonly tables = new Map<string, TableState>();
  private readonly inFlight = new Set<Promise<void>>();
  private buffered = 0;
  private inFlightRows = 0;
  private aborted: StewardError | undefined;
  private readonly maxRows: number;
  private readonly maxDelayMs: number;
  private readonly expediteRows: number;
  private readonly maxInFlight: number;
  private readonly initialMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  /** The target's serialised-rows fast path (both methods), bound; undefined when it takes row objects. */
  private readonly codec:
    | { encode: (table: string, rows: readonly object[]) => string; insert: (table: string, parts: readonly (string | Uint8Array)[]) => Promise<void> }
    | undefined;
  readonly stats: SinkStats = { inserted: 0, batches: 0, retries: 0, poison: 0 };

  constructor(
    private readonly target: SinkTarget,
    private readonly opts: SinkOptions,
  ) {
    this.maxRows = Math.max(1, opts.maxRows ?? 12_000);
    this.maxDelayMs = Math.max(0, opts.maxDelayMs ?? 200);
    this.expediteRows = Math.max(1, opts.expediteRows ?? 1000);
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 2);
    this.initialMs = opts.retry?.initialMs ?? 100;
    this.maxBackoffMs = opts.retry?.maxMs ?? 10_000;
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
    this.codec =
      target.encodeRows && target.insertEncoded
        ? { encode: target.encodeRows.bind(target), insert: target.insertEncoded.bind(target) }
        : undefined;
  }

  /** Queues rows for `table`; resolves when every one of them is inserted or dead-lettered. `expedite`: see expediteRows. */
  write(table: string, items: readonly SinkItem[], expedite = false): Promise<void> {
    if (this.aborted) return Promise.reject(this.aborted);
    if (items.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const serialise = this.codec !== undefined;
      const waiter: Waiter = { remaining: 0, resolve, reject };
      const segments: Segment[] = [];
      // Serialised here, while earlier inserts are in flight.
      for (let i = 0; i < items.length; i += this.maxRows) {
        const part = i === 0 && items.length <= this.maxRows ? items : items.slice(i, i + this.maxRows);
        if (serialise) {
          const sources = new Array<unknown>(part.length);
          for (let j = 0; j < part.length; j++) sources[j] = part[j].source;
          segments.push({ count: part.length, items: undefined, body: this.encode(table, part), sources, waiter });
        } else segments.push({ count: part.length, items: part, body: undefined, sources: undefined, waiter });
      }
      this.enqueue(table, waiter, segments, expedite);
    });
  }

  /** Buffers a write's segments (all of one waiter) and starts what may go now. */
  private enqueue(table: string, waiter: Waiter, segments: Segment[], expedite: boolean): void {
    waiter.remaining = segments.length;
    const t = this.state(table);
    for (const seg of segments) {
      t.segments.push(seg);
      t.rows += seg.count;
      this.buffered += seg.count;
    }
    this.pump(table, t, expedite && this.expedites(table, 0));
  }

  /** Whether a write of `rows` more rows marked `expedite` would go out at once (expediteRows reached). */
  expedites(table: string, rows: number): boolean {
    return (this.tables.get(table)?.rows ?? 0) + rows >= this.expediteRows;
  }

  /** Whether writeEncoded may be used (the target has the encoded fast path). */
  get encodesLines(): boolean {
    return this.codec !== undefined;
  }

  /**
   * Queues rows already encoded exactly as the target's `encodeRows` would encode them: `body` holds one
   * newline-terminated line per source, in order (the sink keeps the buffer: the caller must not reuse it).
   * Resolves like write().
   */
  writeEncoded(table: string, body: Buffer, sources: readonly unknown[], expedite = false): Promise<void> {
    if (this.aborted) return Promise.reject(this.aborted);
    if (!this.codec) return Promise.reject(new StewardError('STEWARD_INTERNAL', `sink: encoded rows for ${table}, but the target takes row objects`));
    if (sources.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { remaining: 0, resolve, reject };
      this.enqueue(table, waiter, [{ count: sources.length, items: undefined, body, sources, waiter }], expedite);
    });
  }

  /** Inserts everything buffered now, without waiting for the timer. */
  async flush(): Promise<void> {
    while (this.buffered > 0 || this.inFlight.size > 0) {
      for (const [table, t] of this.tables) this.pump(table, t, true);
      if (this.inFlight.size === 0) break; // aborted
      await Promise.race(this.inFlight);
    }
  }

  /** Stops retrying: pending and future writes reject (their offsets must then not be committed). */
  abort(reason = 'sink closed'): void {
    this.aborted = new StewardError('STEWARD_CLICKHOUSE', reason, { retryable: true });
    for (const t of this.tables.values()) {
      if (t.timer) clearTimeout(t.timer);
      t.timer = undefined;
      for (const seg of t.segments) seg.waiter.reject(this.aborted);
      t.segments = [];
      t.rows = 0;
    }
    this.buffered = 0;
  }

  /** Rows written and not yet handed to an insert. */
  get pending(): number {
    return this.buffered;
  }

  /** Rows written and not yet inserted or dead-lettered: buffered plus those of the inserts in flight (retries included). */
  get unsettled(): number {
    return this.buffered + this.inFlightRows;
  }

  private state(table: string): TableState {
    let t = this.tables.get(table);
    if (!t) {
      t = { segments: [], rows: 0, inFlight: 0, timer: undefined };
      this.tables.set(table, t);
    }
    return t;
  }

  /**
   * Starts inserts while fewer than maxInFlight run: a full batch (maxRows) always goes; a partial one goes
   * when `force` (its timer expired, an insert just finished — group commit —, or flush()). Otherwise the
   * partial buffer waits at most maxDelayMs.
   */
  private pump(table: string, t: TableState, force: boolean): void {
    while (!this.aborted && t.rows > 0 && t.inFlight < this.maxInFlight && (force || t.rows >= this.maxRows)) {
      const chunk = this.take(t);
      const rows = chunk.reduce((n, s) => n + s.count, 0);
      this.inFlightRows += rows;
      t.inFlight++;
      const p = this.insertChunk(table, chunk).then(
        () => {
          for (const seg of chunk) if (--seg.waiter.remaining === 0) seg.waiter.resolve();
        },
        (e: unknown) => {
          for (const seg of chunk) seg.waiter.reject(e);
        },
      );
      const done: Promise<void> = p.finally(() => {
        this.inFlight.delete(done);
        this.inFlightRows -= rows;
        t.inFlight--;
        // Group commit: rows that arrived while the server was busy go now rather than after their timer.
        if (t.rows > 0) this.pump(table, t, true);
      });
      this.inFlight.add(done);
    }
    if (t.rows === 0 || this.aborted) {
      if (t.timer) clearTimeout(t.timer);
      t.timer = undefined;
    } else {
      t.timer ??= setTimeout(() => {
        t.timer = undefined;
        this.pump(table, t, true);
      }, this.maxDelayMs);
    }
  }

  /** Whole segments, oldest first, up to maxRows rows (write() cuts segments at maxRows; a writeEncoded body is one). */
  private take(t: TableState): Segment[] {
    let n = 0;
    let k = 0;
    while (k < t.segments.length && (k === 0 || n + t.segments[k].count <= this.maxRows)) n += t.segments[k++].count;
    const chunk = t.segments.splice(0, k);
    t.rows -= n;
    this.buffered -= n;
    return chunk;
  }

  private async insertChunk(table: string, chunk: Segment[]): Promise<void> {
    const poison: PoisonRow[] = [];
    try {
      await this.insertParts(table, chunk, poison);
    } catch (e) {
      if (this.aborted) throw this.aborted;
      throw e;
    }
    if (poison.length > 0) {
      await this.withRetry(table, () => this.opts.onPoison(poison));
      this.stats.poison += poison.length;
    }
  }

  /** The chunk as sent at first: the segments' pre-serialised bodies (or the row objects). */
  private async insertParts(table: string, chunk: Segment[], poison: PoisonRow[]): Promise<void> {
    const rows = chunk.reduce((n, s) => n + s.count, 0);
    try {
      let t0 = 0;
      await this.withRetry(table, () => {
        t0 = performance.now();
        return this.codec
          ? this.codec.insert(table, chunk.map((s) => s.body ?? ''))
          : this.target.insert(table, chunk.flatMap((s) => (s.items ?? []).map((i) => i.row)));
      });
      this.inserted(table, rows, t0);
    } catch (e) {
      if (this.aborted || isRetryable(e) || isEndpointFailure(e)) throw e;
      const units = chunk.flatMap(unitsOf);
      if (units.length === 1) return this.poisoned(table, units[0], e, poison);
      const mid = units.length >> 1;
      await this.insertIsolating(table, units.slice(0, mid), poison);
      await this.insertIsolating(table, units.slice(mid), poison);
    }
  }

  /** Counts a successful insert whose last attempt started at `t0` (performance.now()). */
  private inserted(table: string, rows: number, t0: number): void {
    this.stats.inserted += rows;
    this.stats.batches++;
    try {
      this.opts.onInserted?.(table, rows, (performance.now() - t0) / 1000);
    } catch {
      // A failing observer must not turn an insert that succeeded into a data error (and its rows into poison).
    }
  }

  /** Inserts rows; on a data error splits them in halves until the offending rows are alone. */
  private async insertIsolating(table: string, units: readonly Unit[], poison: PoisonRow[]): Promise<void> {
    try {
      let t0 = 0;
      await this.withRetry(table, () => {
        t0 = performance.now();
        return this.codec ? this.codec.insert(table, joinLines(units)) : this.target.insert(table, units.map((u) => u.row ?? {}));
      });
      this.inserted(table, units.length, t0);
    } catch (e) {
      if (this.aborted || isRetryable(e) || isEndpointFailure(e)) throw e;
      if (units.length === 1) return this.poisoned(table, units[0], e, poison);
      const mid = units.length >> 1;
      await this.insertIsolating(table, units.slice(0, mid), poison);
      await this.insertIsolating(table, units.slice(mid), poison);
    }
  }

  private encode(table: string, items: readonly SinkItem[]): string {
    const rows = new Array<object>(items.length);
    for (let i = 0; i < items.length; i++) rows[i] = items[i].row;
    return this.codec ? this.codec.encode(table, rows) : '';
  }

  private poisoned(table: string, unit: Unit, e: unknown, poison: PoisonRow[]): void {
    const err = e instanceof StewardError ? e : new StewardError('STEWARD_CLICKHOUSE', String(e), { cause: e });
    const line = unit.line === undefined || typeof unit.line === 'string' ? unit.line : unit.line.toString('utf8');
    poison.push({ table, row: unit.row, line, source: unit.source, error: err });
  }

  /** Runs `fn` with this sink's backoff while it fails retryably (also used for the ledger's head reads). */
  async withRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const table = what;
    for (let attempt = 1; ; attempt++) {
      if (this.aborted) throw this.aborted;
      try {
        return await fn();
      } catch (e) {
        if (!isRetryable(e) || this.aborted) throw this.aborted ?? e;
        // Full jitter keeps several sink instances from hammering a recovering server in lockstep.
        const cap = Math.min(this.maxBackoffMs, this.initialMs * 2 ** Math.min(attempt - 1, 20));
        const delay = Math.round(cap / 2 + (this.random() * cap) / 2);
        this.stats.retries++;
        this.opts.onRetry?.(e, attempt, delay, table);
        await this.sleep(delay);
      }
    }
  }
}

/** A segment's rows for bisection: its items, or its text split into lines paired with the sources. */
function unitsOf(s: Segment): Unit[] {
  if (s.items) return s.items.map((i) => ({ row: i.row, source: i.source }));
  const body = s.body ?? '';
  const sources = s.sources ?? [];
  const out: Unit[] = [];
  for (let at = 0; at < body.length; ) {
    const nl = body.indexOf('\n', at);
    const end = nl < 0 ? body.length : nl + 1;
    out.push({ line: typeof body === 'string' ? body.slice(at, end) : body.subarray(at, end), source: sources[out.length] });
    at = end;
  }
  // Not retryable and not poison: the batch's writes reject, so their offsets are never committed.
  if (out.length !== s.count) throw new StewardError('STEWARD_INTERNAL', `sink target encoded ${s.count} rows as ${out.length} lines; cannot isolate the rejected row`);
  return out;
}

/** Lines of a bisected batch as one insert body (text, or bytes when any line came from writeEncoded). */
function joinLines(units: readonly Unit[]): (string | Buffer)[] {
  if (units.every((u) => typeof u.line !== 'object')) return [units.map((u) => u.line ?? '').join('')];
  return [Buffer.concat(units.map((u) => (typeof u.line === 'string' ? Buffer.from(u.line, 'utf8') : (u.line ?? Buffer.alloc(0)))))];
}
