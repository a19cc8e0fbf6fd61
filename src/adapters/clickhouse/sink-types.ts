/** The public types of ClickHouseSink (sink.ts): its target, its items, its options and stats. */
import type { StewardError } from '../../errors.js';

export interface SinkTarget {
  insert(table: string, rows: readonly object[]): Promise<void>;
  /**
   * Optional fast path (both or neither): the sink serialises each write's rows with `encodeRows` at once
   * (overlapping the inserts in flight) and later sends a batch's parts, in order, with `insertEncoded` as
   * one INSERT. `encodeRows` must give exactly one line per row, each ending with a newline (TSV escapes
   * newlines inside fields, JSON.stringify too): the sink then keeps only that text, not the row objects, and
   * isolates a poison row by splitting the text into its lines.
   */
  encodeRows?(table: string, rows: readonly object[]): string;
  /** Parts are `encodeRows` text or bytes given to `ClickHouseSink.writeEncoded` (UTF-8, the same lines). */
  insertEncoded?(table: string, parts: readonly (string | Uint8Array)[]): Promise<void>;
}

export interface SinkItem {
  row: object;
  /** Whatever the caller needs to dead-letter the row (e.g. the original Kafka message). */
  source?: unknown;
}

export interface PoisonRow {
  table: string;
  /** The row object (targets without the encoded fast path), else undefined and `line` holds its text. */
  row?: object;
  /** The row as encoded (a line ending with a newline, as text), with the encoded fast path. */
  line?: string;
  source?: unknown;
  error: StewardError;
}

export interface SinkOptions {
  /**
   * Rows per insert (and the size that triggers a flush). Default 12 000: ClickHouse's cost is mostly per
   * insert (a new part per partition), so through Kafka 12 000 cost the server ~6 µs of CPU per row against
   * ~9.5 at 6 000 (bench:sink). The stage's pipelined partitions keep up to two fetches each outstanding, well
   * above that under backlog; a partial batch waits at most maxDelayMs.
   */
  maxRows?: number;
  /** Longest a row waits in the buffer. Default 200 ms. */
  maxDelayMs?: number;
  /**
   * A write marked `expedite` (its source has caught up: no more rows are known to be coming) sends a partial
   * buffer of at least this many rows at once instead of after maxDelayMs: lingering would not make that
   * insert much bigger, only later. Smaller buffers still linger, so a trickle is not sent as tiny inserts.
   * Default 1 000.
   */
  expediteRows?: number;
  /** Inserts per table running at once (the next batch goes while the server still parses the previous one). Default 2. */
  maxInFlight?: number;
  retry?: { initialMs?: number; maxMs?: number };
  /** Receives isolated poison rows; must persist them (DLQ) before resolving. Retried like an insert if it throws. */
  onPoison: (rows: PoisonRow[]) => Promise<void>;
  onRetry?: (err: unknown, attempt: number, delayMs: number, table: string) => void;
  /** Told after every successful insert (also each part of a bisected batch). */
  onInserted?: (table: string, rows: number, seconds: number) => void;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface SinkStats {
  inserted: number;
  batches: number;
  retries: number;
  poison: number;
}
