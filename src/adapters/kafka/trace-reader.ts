/**
 * Reads the records of one topic partition by offset: the scorer's join (docs/pipeline.md "Hot path",
 * spec-decisions D29). A decision names the partition and offset of its trace (headers, contracts C10); the
 * scorer asks this reader for that record instead of receiving a re-encoded copy of the trace.
 *
 * Why a reader of its own and not the scorer's group subscribing to both topics: kafkajs fetches a broker's
 * partitions together and fetches again only once every batch of the last fetch was handled, so a trace batch
 * waiting for its decisions would hold back the very fetch that brings them (one broker: a deadlock). Here the
 * reader's consumer is its own (a one-member group on a fixed assignment, like StewardClient's replies
 * consumer); it never commits, it is positioned with seek, and only the scorer's decisions partition carries
 * offsets and transactions, so exactly-once needs no transaction spanning two input partitions.
 *
 * Decisions of a partition name their traces in increasing offsets (the tripwire stage's outputs keep input
 * order; a replay after a crash starts lower again), so reading is a forward merge: a window of `window`
 * records is kept; a wanted offset below it, or far past it, is reached by a seek. Within the window the
 * reader knows every record in [lo, next): an offset there with no record (a transaction marker, a compacted
 * or deleted record) answers undefined, and so does an offset at or past the partition's end, checked with the
 * broker (a decision always follows its trace, so a real trace is always below the end), and a partition the
 * topic does not have (PartitionReaders): a forged or stale decision's headers are dead-lettered, not waited on.
 */
import { randomUUID } from 'node:crypto';
import type { KafkaAdapter } from './client.js';
import type { BatchControl, InBatch, InMessage, StewardConsumer } from './kafka-types.js';
import { StewardError } from '../../errors.js';
import { SharedAdmin, SharedQuestion, timeBoxed } from './shared-admin.js';

export interface PartitionReaderOptions {
  /** Records kept in memory (the read-ahead window); also how far past the fetch position a wanted offset is read up to rather than sought. */
  window?: number;
  /** How long get() waits for a record before failing retryably (the stage retries with backoff). */
  waitMs?: number;
  /** Bytes (keys and values) kept: the read-ahead also stops here, unless a read waits further on. Default 32 MiB (a
   * window of 2000 traces of limits.max_trace_bytes, 900 KB, alone could hold 1.8 GB per traces partition). */
  maxBytes?: number;
  /** Told when the reader's consumer crashed for good (the next get() starts another). */
  onCrash?: (err: Error) => void;
}

interface Waiter {
  offset: bigint;
  resolve: (m: InMessage | undefined) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout;
}

/** How long a read waits before asking whether its offset is past the partition's end (a real trace comes sooner). */
const END_CHECK_MS = 1000;
/** How long one end question may take (kafkajs retries a broker away for much longer): the read's wait stays its bound. */
const END_QUERY_MS = 5000;

const unavailable = (why: string, cause?: unknown) => new StewardError('STEWARD_KAFKA', `trace reader: ${why}`, { retryable: true, cause });

export class PartitionReader {
  private readonly buf = new Map<bigint, InMessage>();
  private bufBytes = 0;
  /** The highest high watermark a batch reported: offsets below it exist (or existed). */
  private hw = -1n;
  /** Every record of [lo, next) is in `buf`; -1 until the first seek. */
  private lo = -1n;
  private next = -1n;
  private waiters: Waiter[] = [];
  private wakeFetch?: () => void;
  private consumer?: StewardConsumer;
  private starting?: Promise<void>;
  private closed = false;
  /** The partition's end as the broker reports it now (undefined: not known), one question for concurrent reads. */
  private readonly end = new SharedQuestion<bigint | undefined>(() => this.queryEnd());
  private readonly admin: SharedAdmin;
  private readonly ownAdmin: boolean;
  dead = false;
  private readonly window: number;
  private readonly window2: bigint;
  private readonly maxBytes: number;

  constructor(
    private readonly adapter: KafkaAdapter,
    readonly topic: string,
    readonly partition: number,
    readonly groupId: string,
    private readonly o: PartitionReaderOptions = {},
    /** PartitionReaders' admin client, shared by its readers; without it the reader keeps one of its own. */
    admin?: SharedAdmin,
  ) {
    this.ownAdmin = admin === undefined;
    this.admin = admin ?? new SharedAdmin(adapter);
    this.window = Math.max(16, o.window ?? 4096);
    this.window2 = BigInt(this.window);
    this.maxBytes = Math.max(1, o.maxBytes ?? 32 * 1024 * 1024);
  }

  /** The record at `offset`, or undefined when the partition holds none there (marker, compacted, deleted). */
  async get(offset: string): Promise<InMessage | undefined> {
    const o = BigInt(offset);
    await this.start();
    if (this.dead || this.closed) throw unavailable(`reader of ${this.topic}[${this.partition}] is closed`);
    const waitMs = this.o.waitMs ?? 30_000;
    const boxMs = Math.min(END_QUERY_MS, Math.floor(waitMs / 2));
    const far = () => this.next < 0n || o >= this.next + this.window2;
    // A seek past the end would be out of range, and kafkajs would then read the partition from its earliest
    // offset: answered here instead. Below the highest known high watermark the record exists (or existed). Not on a
    // first read (a start or rebalance sends a chunk's lanes at once): if it waits, its own check below answers.
    if (this.next >= 0n && far() && o >= this.hw && (await this.pastEnd(o, boxMs))) return undefined;
    if (this.dead || this.closed) throw unavailable(`reader of ${this.topic}[${this.partition}] is closed`);
    // Forward only when no read waits below `o`: a seek past it would leave that read waiting out its timeout
    // (settle answers only offsets >= lo). Otherwise the read-ahead, which goes on for waiting reads, gets there.
    if (o < this.lo || (far() && !this.waiters.some((w) => w.offset < o))) this.seekTo(o);
    if (o < this.next) return this.buf.get(o);
    return new Promise((resolve, reject) => {
      const lastAt = waitMs - boxMs;
      const checkMs = Math.min(END_CHECK_MS, lastAt);
      // A read still waiting after checkMs asks the broker whether `o` is past the end ("none"), and once more before
      // it gives up: an offset a little past the end is read towards and never comes; an empty partition yields
      // no batch at all. Otherwise it fails retryably after waitMs (the broker away): the last question starts
      // boxMs before and takes at most boxMs.
      const t0 = Date.now();
      const check = (last: boolean) => () =>
        void this.pastEnd(o, Math.max(0, Math.min(boxMs, waitMs - (Date.now() - t0)))).then((past) => {
          if (!this.waiters.includes(w)) return;
          if (!past && !last) {
            w.timer = setTimeout(check(true), Math.max(0, lastAt - (Date.now() - t0)));
            return;
          }
          this.waiters = this.waiters.filter((x) => x !== w);
          if (past) resolve(undefined);
          else reject(unavailable(`record ${this.topic}[${this.partition}]@${offset} not read within ${waitMs} ms`));
        });
      const w: Waiter = { offset: o, resolve, reject, timer: setTimeout(check(checkMs >= lastAt), checkMs) };
      this.waiters.push(w);
      this.wakeFetch?.();
    });
  }

  /**
   * Whether `o` is at or past the partition's end, asked of the broker now: a read asked for a decision's trace, which
   * was in the partition before the decision was written. A batch's high watermark is not enough: it may have been
   * fetched before the trace was written. False when the broker cannot be asked within `boxMs` (the read stays
   * retryable). Reads asking at once share one question (SharedQuestion: a "past" may predate the trace).
   */
  private pastEnd(o: bigint, boxMs: number): Promise<boolean> {
    const past = (end: bigint | undefined) => end !== undefined && o >= end;
    return timeBoxed(this.end.get(past).then(past), boxMs, false);
  }

  private async queryEnd(): Promise<bigint | undefined> {
    const end = await this.admin.partitionEnd(this.topic, this.partition, END_QUERY_MS);
    if (end !== undefined && end > this.hw) this.hw = end;
    return end;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(unavailable('closed'));
    }
    this.wakeFetch?.();
    const c = this.consumer;
    this.consumer = undefined;
    if (c) {
      await c.stop().catch(() => undefined);
      await c.disconnect().catch(() => undefined);
    }
    if (this.ownAdmin) await this.admin.close();
  }

  /**
   * Starts the reader's consumer once. A start that fails (the broker away) is forgotten and its consumer closed, so
   * the next get() starts a new one, and fails retryably (the scorer waits the outage out). Kept, it failed every later
   * read with kafkajs' own error, which the scorer dead-lettered (no verdict) — seen in broker-restart on the join.
   */
  private start(): Promise<void> {
    this.starting ??= this.startConsumer().catch(async (e: unknown) => {
      this.starting = undefined;
      const c = this.consumer;
      this.consumer = undefined;
      if (c) {
        await c.stop().catch(() => undefined);
        await c.disconnect().catch(() => undefined);
      }
      throw unavailable(`consumer of ${this.topic}[${this.partition}] did not start: ${e instanceof Error ? e.message : String(e)}`, e);
    });
    return this.starting;
  }

  private async startConsumer(): Promise<void> {
    const c = this.adapter.consumer({ groupId: this.groupId, assign: { topic: this.topic, partitions: [this.partition] }, maxWaitTimeMs: 100 });
    this.consumer = c;
    // A consumer given up on by start() (replaced by the next one) no longer speaks for the reader.
    c.onCrash((err, willRestart) => {
      if (willRestart || this.consumer !== c) return;
      this.dead = true;
      for (const w of this.waiters.splice(0)) {
        clearTimeout(w.timer);
        w.reject(unavailable('consumer crashed', err));
      }
      this.o.onCrash?.(err);
    });
    // A rejoin (kafkajs restarted the consumer) starts from the group's committed offset, which this reader never
    // sets: go back to where it was.
    c.onGroupJoin(() => {
      if (this.next >= 0n && this.consumer === c) c.seek(this.topic, this.partition, this.next.toString());
    });
    await c.subscribe([this.topic], true);
    await c.runBatches((b, ctl) => this.onBatch(b, ctl), { partitionsConcurrently: 1, autoCommit: false });
  }

  private seekTo(o: bigint): void {
    this.buf.clear();
    this.bufBytes = 0;
    this.lo = o;
    this.next = o;
    try {
      this.consumer!.seek(this.topic, this.partition, o.toString());
    } catch (e) {
      // kafkajs between a crash and its restart ("consumer#run must be called first"): the restart's group join
      // seeks to `next`. Thrown on, kafkajs' error would have the scorer dead-letter the decision. Anything else
      // is thrown on (none is expected: the offset is a validated non-negative integer).
      if (!/consumer#run must be called first/.test((e as Error)?.message ?? '')) throw e;
    }
    this.wakeFetch?.();
  }

  /** Whether a record of `size` bytes does not fit beside what is kept. */
  private full(size: number): boolean {
    return this.buf.size >= this.window || (this.buf.size > 0 && this.bufBytes + size > this.maxBytes);
  }

  private wantedFrom(x: bigint): boolean {
    return this.waiters.some((w) => w.offset >= x);
  }

  private async onBatch(b: InBatch, ctl: BatchControl): Promise<void> {
    // Before the first seek the position is the earliest offset: nothing anyone asked for.
    if (this.next < 0n) return;
    const hw = BigInt(b.highWatermark);
    if (hw > this.hw) this.hw = hw;
    for (const m of b.messages) {
      if (ctl.isStale() || this.closed) return;
      const off = BigInt(m.offset);
      // Resolved though skipped: else kafkajs fetches the same records again at once, in a loop (after an
      // out-of-range seek it restarts from the earliest offset, far below `next`).
      if (off < this.next) {
        ctl.resolveOffset(m.offset);
        continue;
      }
      const size = recordBytes(m);
      // Read ahead up to the window (records and bytes), further only for a waiting get().
      while (this.full(size) && !this.wantedFrom(this.next)) {
        await new Promise<void>((r) => {
          const t = setTimeout(r, 1000);
          this.wakeFetch = () => {
            clearTimeout(t);
            r();
          };
        });
        this.wakeFetch = undefined;
        if (ctl.isStale() || this.closed) return;
        await ctl.heartbeat().catch(() => undefined);
      }
      if (ctl.isStale() || this.closed || off < this.next) return;
      while (this.buf.size > 0 && this.full(size)) {
        const first = this.buf.keys().next().value as bigint;
        this.bufBytes -= recordBytes(this.buf.get(first)!);
        this.buf.delete(first);
        this.lo = first + 1n;
      }
      this.buf.set(off, m);
      this.bufBytes += size;
      this.next = off + 1n;
      ctl.resolveOffset(m.offset);
      this.settle();
    }
    if (ctl.isStale() || this.closed || b.lastOffset === undefined) return;
    const end = BigInt(b.lastOffset) + 1n;
    if (end > this.next) {
      this.next = end;
      ctl.resolveOffset(b.lastOffset);
      this.settle();
    }
  }

  /** Answers every waiter whose offset the reader now knows. */
  private settle(): void {
    if (this.waiters.length === 0) return;
    const keep: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.offset < this.next && w.offset >= this.lo) {
        clearTimeout(w.timer);
        w.resolve(this.buf.get(w.offset));
      } else keep.push(w);
    }
    this.waiters = keep;
    // The reads left all far ahead (kept from seeking while a lower one waited): seek to the first, if it exists.
    const first = keep.reduce<bigint | undefined>((m, w) => (m === undefined || w.offset < m ? w.offset : m), undefined);
    if (first !== undefined && first >= this.next + this.window2 && first < this.hw) this.seekTo(first);
  }
}

function recordBytes(m: InMessage): number {
  return (m.value?.length ?? 0) + (m.key?.length ?? 0);
}

/**
 * One PartitionReader per partition of one topic, created on first use (the scorer's co-partitioned traces). A
 * reader unused for `idleMs` is closed: its decisions partition moved to another member (a rebalance), and its
 * consumer and group would otherwise stay open until the stage stops.
 */
export class PartitionReaders {
  private readonly readers = new Map<number, PartitionReader>();
  private readonly lastUsed = new Map<number, number>();
  private readonly instance = randomUUID().slice(0, 8);
  private readonly sweep: NodeJS.Timeout;
  /** The topic's partition count as last asked (0: not yet). */
  private count = 0;
  /** The topic's partition count, asked once for the reads asking meanwhile. */
  private readonly partitionCount = new SharedQuestion<number>(() => this.queryCount());
  /** One admin client for the readers' broker questions, open until close(). */
  private readonly admin: SharedAdmin;

  constructor(
    private readonly adapter: KafkaAdapter,
    private readonly topic: string,
    private readonly groupPrefix: string,
    private readonly o: PartitionReaderOptions & { idleMs?: number } = {},
  ) {
    this.admin = new SharedAdmin(adapter);
    const idleMs = o.idleMs ?? 120_000;
    this.sweep = setInterval(() => {
      const now = Date.now();
      const keep = new Set([...this.readers.keys()].filter((p) => now - (this.lastUsed.get(p) ?? now) < idleMs));
      void this.retain(keep);
    }, Math.max(1000, idleMs / 2));
    this.sweep.unref();
  }

  async get(partition: number, offset: string): Promise<InMessage | undefined> {
    // A partition the topic does not have holds no record: asking a consumer for it crashes the consumer, for ever.
    if (partition >= this.count && !(await this.hasPartition(partition))) return undefined;
    this.lastUsed.set(partition, Date.now());
    let r = this.readers.get(partition);
    if (!r || r.dead) {
      if (r) void r.close();
      r = new PartitionReader(this.adapter, this.topic, partition, `${this.groupPrefix}.trace-reader.${this.instance}.${partition}`, this.o, this.admin);
      this.readers.set(partition, r);
    }
    return r.get(offset);
  }

  /**
   * Whether the topic has `partition`, asked of the broker whenever the partition count known so far says no
   * (partitions may have been added since). A topic without partitions (being recreated?) fails retryably. Reads
   * asking at once share one question; a "no" from one asked before this read began is asked again.
   */
  private async hasPartition(partition: number): Promise<boolean> {
    return partition < (await this.partitionCount.get((n) => partition >= n));
  }

  private async queryCount(): Promise<number> {
    const n = await this.admin
      .use((a) => a.partitionCount(this.topic))
      .catch((e: unknown) => {
        throw unavailable(`partitions of ${this.topic}: ${e instanceof Error ? e.message : String(e)}`, e);
      });
    if (n === 0) throw unavailable(`${this.topic} has no partitions`);
    this.count = Math.max(this.count, n);
    return n;
  }

  /** The partitions with an open reader. */
  partitions(): number[] {
    return [...this.readers.keys()].sort((a, b) => a - b);
  }

  /** Closes the readers of partitions no longer in `keep` (after a rebalance moved them away). */
  async retain(keep: ReadonlySet<number>): Promise<void> {
    const gone = [...this.readers.entries()].filter(([p]) => !keep.has(p));
    for (const [p] of gone) {
      this.readers.delete(p);
      this.lastUsed.delete(p);
    }
    await this.closeAll(gone.map(([, r]) => r));
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    const all = [...this.readers.values()];
    this.readers.clear();
    await this.closeAll(all);
    await this.admin.close();
  }

  private async closeAll(rs: PartitionReader[]): Promise<void> {
    if (rs.length === 0) return;
    await Promise.all(rs.map((r) => r.close()));
    // The readers' groups never committed: delete them rather than leave one per reader and restart behind.
    await this.admin.use((a) => a.deleteGroups(rs.map((r) => r.groupId))).catch(() => undefined);
  }
}
