/**
 * ClickHouseSink: the sink stage's core, independent of Kafka. Rows are buffered per table and inserted in
 * batches (by size, or after maxDelayMs). `write()` resolves only once its rows are durably inserted or
 * dead-lettered, so a consumer that awaits it before committing offsets never loses a row.
 *
 * Failures: retryable errors (ClickHouse down, timeouts, too many parts) are retried with exponential
 * backoff for as long as it takes; a non-retryable (data) error makes the batch bisect until the poison rows
 * are isolated, and those go to `onPoison` (the DLQ) while the rest is inserted.
 */
import { StewardError, isRetryable } from '../../errors.js';

export interface SinkTarget {
  insert(table: string, rows: readonly object[]): Promise<void>;
  /** Optional fast path: rows pre-serialised to JSON by the sink (at write time, overlapping the previous insert). */
  insertJsonLines?(table: string, lines: readonly string[]): Promise<void>;
}

export interface SinkItem {
  row: object;
  /** Whatever the caller needs to dead-letter the row (e.g. the original Kafka message). */
  source?: unknown;
}

export interface PoisonRow {
  table: string;
  row: object;
  source?: unknown;
  error: StewardError;
}

export interface SinkOptions {
  /** Rows per insert (and the size that triggers a flush). Default 10 000. */
  maxRows?: number;
  /** Longest a row waits in the buffer. Default 200 ms. */
  maxDelayMs?: number;
  retry?: { initialMs?: number; maxMs?: number };
  /** Receives isolated poison rows; must persist them (DLQ) before resolving. Retried like an insert if it throws. */
  onPoison: (rows: PoisonRow[]) => Promise<void>;
  onRetry?: (err: unknown, attempt: number, delayMs: number, table: string) => void;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface SinkStats {
  inserted: number;
  batches: number;
  retries: number;
  poison: number;
}

interface Waiter {
  remaining: number;
  resolve(): void;
  reject(e: unknown): void;
}

interface Pending {
  item: SinkItem;
  json?: string;
  waiter: Waiter;
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ClickHouseSink {
  private readonly buffers = new Map<string, Pending[]>();
  private buffered = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private aborted: StewardError | undefined;
  private readonly maxRows: number;
  private readonly maxDelayMs: number;
  private readonly initialMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  readonly stats: SinkStats = { inserted: 0, batches: 0, retries: 0, poison: 0 };

  constructor(
    private readonly target: SinkTarget,
    private readonly opts: SinkOptions,
  ) {
    this.maxRows = Math.max(1, opts.maxRows ?? 10_000);
    this.maxDelayMs = Math.max(0, opts.maxDelayMs ?? 200);
    this.initialMs = opts.retry?.initialMs ?? 100;
    this.maxBackoffMs = opts.retry?.maxMs ?? 10_000;
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
  }

  /** Queues rows for `table`; resolves when every one of them is inserted or dead-lettered. */
  write(table: string, items: readonly SinkItem[]): Promise<void> {
    if (this.aborted) return Promise.reject(this.aborted);
    if (items.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { remaining: items.length, resolve, reject };
      const buf = this.buffers.get(table) ?? [];
      const serialise = this.target.insertJsonLines !== undefined;
      for (const item of items) buf.push({ item, waiter, json: serialise ? JSON.stringify(item.row) : undefined });
      this.buffers.set(table, buf);
      this.buffered += items.length;
      this.schedule();
    });
  }

  /** Inserts everything buffered now, without waiting for the timer. */
  async flush(): Promise<void> {
    this.clearTimer();
    while (this.buffered > 0 || this.running) {
      if (!this.running) this.running = this.drain();
      await this.running;
    }
  }

  /** Stops retrying: pending and future writes reject (their offsets must then not be committed). */
  abort(reason = 'sink closed'): void {
    this.aborted = new StewardError('STEWARD_CLICKHOUSE', reason, { retryable: true });
    this.clearTimer();
    for (const buf of this.buffers.values()) for (const p of buf) p.waiter.reject(this.aborted);
    this.buffers.clear();
    this.buffered = 0;
  }

  get pending(): number {
    return this.buffered;
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.running) return; // the drain loop picks new rows up when it finishes its batch
    if (this.buffered >= this.maxRows) {
      this.clearTimer();
      this.running = this.drain();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (!this.running && this.buffered > 0) this.running = this.drain();
    }, this.maxDelayMs);
  }

  private async drain(): Promise<void> {
    try {
      while (this.buffered > 0 && !this.aborted) {
        for (const [table, buf] of this.buffers) {
          if (buf.length === 0) continue;
          const chunk = buf.splice(0, this.maxRows);
          this.buffered -= chunk.length;
          try {
            await this.insertChunk(table, chunk);
          } catch (e) {
            for (const p of chunk) p.waiter.reject(e);
            continue;
          }
          for (const p of chunk) if (--p.waiter.remaining === 0) p.waiter.resolve();
        }
      }
    } finally {
      this.running = undefined;
      if (this.buffered > 0 && !this.aborted) this.schedule();
    }
  }

  private async insertChunk(table: string, chunk: Pending[]): Promise<void> {
    const poison: PoisonRow[] = [];
    await this.insertIsolating(table, chunk, poison);
    if (poison.length > 0) {
      await this.withRetry(table, () => this.opts.onPoison(poison));
      this.stats.poison += poison.length;
    }
  }

  /** Inserts all rows; on a data error splits the batch in halves until the offending rows are alone. */
  private async insertIsolating(table: string, chunk: Pending[], poison: PoisonRow[]): Promise<void> {
    try {
      await this.withRetry(table, () =>
        this.target.insertJsonLines
          ? this.target.insertJsonLines(table, chunk.map((p) => p.json ?? JSON.stringify(p.item.row)))
          : this.target.insert(table, chunk.map((p) => p.item.row)),
      );
      this.stats.inserted += chunk.length;
      this.stats.batches++;
    } catch (e) {
      if (this.aborted || isRetryable(e)) throw e;
      if (chunk.length === 1) {
        const err = e instanceof StewardError ? e : new StewardError('STEWARD_CLICKHOUSE', String(e), { cause: e });
        poison.push({ table, row: chunk[0].item.row, source: chunk[0].item.source, error: err });
        return;
      }
      const mid = chunk.length >> 1;
      await this.insertIsolating(table, chunk.slice(0, mid), poison);
      await this.insertIsolating(table, chunk.slice(mid), poison);
    }
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
