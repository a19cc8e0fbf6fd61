/**
 * Server-side cache of the dashboard's ClickHouse panels (docs/dashboard.md "Performance"). A page load over
 * 1M decisions costs ClickHouse ~1 s of CPU (FINAL + join over the raw rows; FINAL is single-threaded on
 * 18.16), and every open page polls every refresh interval: with the answer kept, a reload, a second viewer or
 * a poll over data that did not change reads no raw row.
 *
 * The key is the request (range, bucket, options) plus the data's fingerprint: the database's active parts
 * (name, row count, modification time) from system.parts. Every INSERT makes a new part (a new block number in its name),
 * merges and mutations rename parts, DROP PARTITION removes them — so a row that landed before a poll changes
 * the fingerprint and that poll recomputes: live refresh shows it on the next poll, as without the cache. A
 * stale answer is impossible for data in this database; the TTL (the refresh interval) only bounds memory and
 * any change the fingerprint could not see. Concurrent requests for the same key share one computation;
 * failures are not kept.
 */
import { assertIdentifier, sqlString, type ClickHouseStore } from '../clickhouse/client.js';

export interface PanelCacheOptions {
  /** How long an answer may be reused at most (ms); the dashboard passes its refresh interval. */
  ttlMs: number;
  /** Answers kept (the oldest goes first). */
  maxEntries?: number;
  now?: () => number;
}

interface Entry<T> {
  at: number;
  value: Promise<T>;
}

/**
 * The fingerprint query: one row, a hash over the database's active parts (sorted) and their count. The part's
 * modification time is in it because part names restart when a table is dropped and created again.
 */
export function fingerprintSql(db: string): string {
  return `SELECT toString(cityHash64(arrayStringConcat(arraySort(groupArray(concat(table, '/', name, '/', toString(rows), '/', toString(toUInt32(modification_time))))), ','))) AS f,
      count() AS parts
    FROM system.parts WHERE database = ${sqlString(assertIdentifier(db))} AND active`;
}

export async function dataFingerprint(store: ClickHouseStore): Promise<string> {
  const [row] = await store.query<{ f: string; parts: string }>(fingerprintSql(store.database));
  return `${row?.f ?? ''}:${row?.parts ?? 0}`;
}

export class PanelCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly now: () => number;
  private readonly max: number;
  /** Computations run (misses), for tests and the benchmark. */
  computed = 0;
  hits = 0;

  constructor(private readonly opts: PanelCacheOptions) {
    this.now = opts.now ?? Date.now;
    this.max = Math.max(1, opts.maxEntries ?? 16);
  }

  /** The answer for `key` (request + fingerprint): kept if younger than the TTL, else computed (once for concurrent callers). */
  get(key: string, compute: () => Promise<T>): Promise<T> {
    const t = this.now();
    const hit = this.entries.get(key);
    if (hit && t - hit.at < this.opts.ttlMs) {
      this.hits += 1;
      return hit.value;
    }
    this.computed += 1;
    const value = compute();
    const entry = { at: t, value };
    this.entries.delete(key);
    this.entries.set(key, entry);
    // A failed computation is dropped so the next request retries (only if it is still the kept one).
    value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    // Map order is insertion order and a recomputed key was re-inserted: the first keys are the oldest.
    for (const k of this.entries.keys()) {
      if (this.entries.size <= this.max) break;
      this.entries.delete(k);
    }
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}
