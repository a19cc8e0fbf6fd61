/**
 * The ledger's storage side: the sink is the single writer of every agent's chain. Heads are loaded from
 * ClickHouse on first use (and after a rebalance), entries already stored are skipped (redelivery), and
 * appends are serialised so concurrent partition handlers never interleave a chain.
 *
 * "Already stored" is looked up in `ledger_ids` (keyed by agent_id, entry_id): the ledger itself is sorted by
 * (agent_id, seq), so asking it costs a scan of the agents' whole chains per batch (bench:ledger: 108 ms vs
 * 9 ms per 500-draft batch over 10 agents of 1 M entries each). The index must never miss a stored entry (the entry would chain
 * twice), so it is written after the entries (`stored`) and, whenever a head is loaded, checked against the
 * chain: an agent whose indexed seqs are not exactly 1..max, or whose max is below its head, lost index
 * writes (a crash between the two inserts, a failed write), and the missing ids are copied from the ledger
 * before the agent is used. A batch whose insert failed is `discarded`: its agents' heads
 * and remembered ids are dropped, so its redelivery reloads and re-checks them.
 *
 * Two chain spaces share this code (spec-decisions D30): AGENT_CHAINS (`ledger`, one chain per agent) and
 * RUN_CHAINS (`acm_ledger`, one chain per ACM run and agent, from its own genesis: what a replay bundle holds).
 * A space names its tables and the columns that name a chain; a writer serves one space.
 */
import { canonicalize, LedgerChain, isLedgerEntryType, type LedgerDraft, type LedgerEntry, type LedgerSigner } from '../../engine/ledger/index.js';
import { StewardError } from '../../errors.js';
import { sqlString, type ClickHouseStore } from './client.js';
import { ledgerEntryFromRow, ledgerRow, type LedgerRow } from './rows.js';

const LEDGER_COLUMNS = 'entry_id, agent_id, tenant, seq, ts_ms, type, payload, prev_hash, hash, signature, kid';

/** A kind of chain: where its entries and id index live, and which columns name one chain. */
export interface ChainSpace {
  ledger: 'ledger' | 'acm_ledger';
  ids: 'ledger_ids' | 'acm_ledger_ids';
  /** The columns naming a chain (in both tables). */
  cols: readonly string[];
  /** A draft's values of `cols`. */
  ofDraft(d: Pick<LedgerDraft, 'agent_id' | 'tenant' | 'payload'>): string[];
  /** A stored row's values of `cols`. */
  ofRow(r: Record<string, unknown>): string[];
  /** The row to insert for an entry. */
  row(e: LedgerEntry, canonicalPayload: string, ingestedAtMs: number): LedgerRow;
}

export const AGENT_CHAINS: ChainSpace = {
  ledger: 'ledger',
  ids: 'ledger_ids',
  cols: ['agent_id'],
  ofDraft: (d) => [d.agent_id],
  ofRow: (r) => [String(r.agent_id)],
  row: ledgerRow,
};

/** A run's chain of one agent (a run may hold an approver's events): tenant, run id (the payload's), agent. */
export const RUN_CHAINS: ChainSpace = {
  ledger: 'acm_ledger',
  ids: 'acm_ledger_ids',
  cols: ['tenant', 'run_id', 'agent_id'],
  ofDraft: (d) => [d.tenant, runIdOfPayload(d.payload), d.agent_id],
  ofRow: (r) => [String(r.tenant), String(r.run_id), String(r.agent_id)],
  row: (e, payload, now) => ({ ...ledgerRow(e, payload, now), run_id: runIdOfPayload(e.payload) }),
};

function runIdOfPayload(p: Record<string, unknown>): string {
  return typeof p.run_id === 'string' ? p.run_id : '';
}

/** One string per chain (the agent id itself for agent chains, so their keys are as before). */
const chainKey = (values: readonly string[]): string => (values.length === 1 ? values[0]! : values.join('\u0000'));

/** Reads entries in chain order (raw rows, no FINAL: the verifier must see every stored copy). */
export async function readLedger(store: ClickHouseStore, agentId?: string): Promise<LedgerEntry[]> {
  const where = agentId === undefined ? '' : ` WHERE agent_id = ${sqlString(agentId)}`;
  const rows = await store.query(`SELECT ${LEDGER_COLUMNS} FROM ${store.table('ledger')}${where} ORDER BY agent_id, seq`);
  return rows.map(ledgerEntryFromRow);
}

/**
 * One agent's entries in seq order, page by page (about `pageSize` rows each; every stored copy of a seq in the
 * same page): `steward ledger verify` holds one page at a time instead of the whole chain.
 */
export async function* readLedgerPages(store: ClickHouseStore, agentId: string, pageSize = 10_000): AsyncGenerator<LedgerEntry[]> {
  const agent = sqlString(agentId);
  let after = Number.NEGATIVE_INFINITY;
  for (;;) {
    const lo = Number.isFinite(after) ? ` AND seq > ${after}` : '';
    const rows = (await store.query(`SELECT ${LEDGER_COLUMNS} FROM ${store.table('ledger')} WHERE agent_id = ${agent}${lo} ORDER BY seq LIMIT ${pageSize}`)).map(ledgerEntryFromRow);
    if (rows.length === 0) return;
    if (rows.length < pageSize) {
      yield rows;
      return;
    }
    // The page may have cut a seq's copies: end it at the last seq and read every copy of that seq.
    const last = rows[rows.length - 1]!.seq;
    const rest = (await store.query(`SELECT ${LEDGER_COLUMNS} FROM ${store.table('ledger')} WHERE agent_id = ${agent} AND seq = ${last}`)).map(ledgerEntryFromRow);
    yield [...rows.filter((e) => e.seq !== last), ...rest];
    after = last;
  }
}

export async function ledgerAgents(store: ClickHouseStore): Promise<string[]> {
  const rows = await store.query<{ agent_id: string }>(`SELECT DISTINCT agent_id FROM ${store.table('ledger')} ORDER BY agent_id`);
  return rows.map((r) => r.agent_id);
}

/** A ledger draft from an acgp.ledger record: a draft, or a full entry re-chained by this writer. */
export function ledgerDraftFrom(m: unknown): LedgerDraft {
  const o = (typeof m === 'object' && m !== null ? m : {}) as Record<string, unknown>;
  const bad = (what: string): never => {
    throw new StewardError('STEWARD_SINK_RECORD', `ledger record: ${what}`);
  };
  if (typeof o.entry_id !== 'string' || !o.entry_id) bad('entry_id is required');
  if (typeof o.agent_id !== 'string' || !o.agent_id) bad('agent_id is required');
  if (!isLedgerEntryType(o.type)) bad(`unknown type ${String(o.type)}`);
  const ts = Number(o.ts_ms);
  if (!Number.isSafeInteger(ts) || ts < 0) bad('ts_ms must be a non-negative integer');
  if (typeof o.payload !== 'object' || o.payload === null || Array.isArray(o.payload)) bad('payload must be an object');
  return { entry_id: o.entry_id as string, agent_id: o.agent_id as string, tenant: typeof o.tenant === 'string' ? o.tenant : '', ts_ms: ts, type: o.type as LedgerDraft['type'], payload: o.payload as Record<string, unknown> };
}

export class LedgerWriter {
  private readonly chain: LedgerChain;
  private queue: Promise<unknown> = Promise.resolve();
  private idsQueue: Record<string, string | number>[] = [];
  private idsFlush: Promise<void> | undefined;
  private idsWrites: Promise<void> = Promise.resolve();
  /** entry_ids appended by this process recently (`<chain>\u0000<entry_id>`): a redelivered copy inside one process is skipped without a query. */
  private readonly recent = new Map<string, true>();
  /** Rows per chain appended but not yet reported stored or discarded: their heads must not be evicted. */
  private readonly inFlight = new Map<string, number>();
  private readonly space: ChainSpace;

  constructor(
    private readonly store: ClickHouseStore,
    signer: LedgerSigner,
    private readonly opts: {
      recentIds?: number;
      /** How long stored() collects ids before writing them (default 100 ms). */
      idsLingerMs?: number;
      nowMs?: () => number;
      /** Signs entry hashes elsewhere (src/adapters/crypto/sign-pool.ts) instead of one by one on this thread; same key as `signer`. */
      signMany?: (hashesHex: string[]) => Promise<string[]>;
      /** Chain heads kept in memory (least recently used dropped first, reloaded from ClickHouse when needed; default 100 000). */
      maxHeads?: number;
      /** The chains this writer keeps (default: one per agent). */
      space?: ChainSpace;
    } = {},
  ) {
    this.space = opts.space ?? AGENT_CHAINS;
    const space = this.space;
    this.chain = new LedgerChain(signer, space === AGENT_CHAINS ? undefined : (d) => chainKey(space.ofDraft(d)));
  }

  private keyOfDraft(d: Pick<LedgerDraft, 'agent_id' | 'tenant' | 'payload'>): string {
    return chainKey(this.space.ofDraft(d));
  }

  private keyOfRow(r: object): string {
    return chainKey(this.space.ofRow(r as Record<string, unknown>));
  }

  /** Call after a consumer rebalance: another instance may have appended to the chains we cached. */
  forgetHeads(): void {
    this.queue = this.queue.then(() => {
      this.chain.forget();
      this.recent.clear();
    });
  }

  /**
   * Call once `rows` (from append) are in the ledger table: indexes their ids. Batches' ids are written together
   * after `idsLingerMs` (one part for many batches, off the ledger's critical path). Nothing depends on the write
   * landing at once: this process remembers what it appended, and a lost write (failure, crash) leaves a gap or
   * a mark below the head, which the next head load repairs. Resolves when the write carrying `rows` is done.
   */
  stored(rows: readonly LedgerRow[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    this.landed(rows);
    for (const r of rows) this.idsQueue.push(this.idsRow(r));
    // One write at a time, in order; a failed one makes its agents reload (and repair) on their next batch,
    // rather than leaving only `recent` between a redelivered draft and a second chaining.
    this.idsFlush ??= new Promise<void>((res) => setTimeout(res, this.opts.idsLingerMs ?? 100)).then(() => {
      const q = this.idsQueue;
      this.idsQueue = [];
      this.idsFlush = undefined;
      const write = this.idsWrites.then(() => this.store.insert(this.space.ids, q));
      this.idsWrites = write.catch(() => this.discard(q));
      return write;
    });
    return this.idsFlush;
  }

  /** Resolves once the id-index writes queued so far are done (or failed): call before closing the store. */
  async idsWritten(): Promise<void> {
    await this.idsFlush?.catch(() => undefined);
    await this.idsWrites;
  }

  /** Call when `rows` (from append) could not be stored: their chains' heads and remembered ids are dropped. */
  discard(rows: readonly object[]): Promise<void> {
    this.landed(rows);
    const run = this.queue.then(() => this.forgetAgents(rows));
    this.queue = run;
    return run;
  }

  /** `rows` are stored or given up: their agents' heads may be evicted again. */
  private landed(rows: readonly object[]): void {
    for (const r of rows) {
      const k = this.keyOfRow(r);
      const n = (this.inFlight.get(k) ?? 0) - 1;
      if (n > 0) this.inFlight.set(k, n);
      else this.inFlight.delete(k);
    }
  }

  /** The id-index row of a stored row: its chain's columns, entry id and seq. */
  private idsRow(r: LedgerRow): Record<string, string | number> {
    const o: Record<string, string | number> = { entry_id: r.entry_id, seq: r.seq };
    this.space.cols.forEach((c, i) => (o[c] = this.space.ofRow(r as unknown as Record<string, unknown>)[i]!));
    return o;
  }

  /** Heads held in memory (bounded by `maxHeads` between appends). */
  get heldHeads(): number {
    return this.chain.size;
  }

  private forgetAgents(rows: readonly object[]): void {
    const chains = new Set(rows.map((r) => this.keyOfRow(r)));
    for (const a of chains) this.chain.forget(a);
    for (const k of this.recent.keys()) if (chains.has(k.slice(0, k.lastIndexOf('\u0000')))) this.recent.delete(k);
  }

  /** Chains the drafts (in order) and returns the rows to insert; drafts already in the ledger are skipped. */
  append(drafts: LedgerDraft[]): Promise<LedgerRow[]> {
    const run = this.queue.then(() => this.appendNow(drafts));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async appendNow(drafts: LedgerDraft[]): Promise<LedgerRow[]> {
    const fresh: LedgerDraft[] = [];
    const inBatch = new Set<string>();
    for (const d of drafts) {
      const k = `${this.keyOfDraft(d)}\u0000${d.entry_id}`;
      if (this.recent.has(k) || inBatch.has(k)) continue;
      inBatch.add(k);
      fresh.push(d);
    }
    if (fresh.length === 0) return [];
    // The head map is bounded (one head per agent ever seen would grow for ever): only heads whose entries
    // are all stored are dropped, so a dropped head reloads from ClickHouse as it was (docs/analytics.md, ledger writer).
    this.chain.evict(this.opts.maxHeads ?? 100_000, (a) => this.inFlight.has(a));
    // Heads first: loading one also makes the agent's ids complete in ledger_ids, which storedIds then reads.
    const unknown = new Map<string, string[]>();
    for (const d of fresh) {
      const k = this.keyOfDraft(d);
      if (this.chain.head(k) === undefined) unknown.set(k, this.space.ofDraft(d));
    }
    await this.loadHeads([...unknown.values()]);
    const stored = await this.storedIds(fresh);
    const todo = fresh.filter((d) => !stored.has(`${this.keyOfDraft(d)}\u0000${d.entry_id}`));
    const now = (this.opts.nowMs ?? Date.now)();
    const signMany = this.opts.signMany;
    let entries: LedgerEntry[];
    try {
      if (!signMany) entries = todo.map((d) => this.chain.append(d));
      else {
        const unsigned = todo.map((d) => this.chain.appendUnsigned(d));
        const sigs = await signMany(unsigned.map((e) => e.hash));
        if (sigs.length !== unsigned.length) throw new StewardError('STEWARD_LEDGER_CHAIN', `signer returned ${sigs.length} signatures for ${unsigned.length} entries`, { retryable: true });
        entries = unsigned.map((e, i) => ({ ...e, signature: sigs[i]! }));
      }
    } catch (e) {
      // Nothing of this append is returned, so nothing of it is stored: heads that moved past its entries are
      // reloaded from ClickHouse on the retry, and none of its ids was remembered.
      for (const a of new Set(todo.map((d) => this.keyOfDraft(d)))) this.chain.forget(a);
      throw e;
    }
    const rows: LedgerRow[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      rows[i] = this.space.row(e, canonicalize(e.payload) ?? '{}', now);
      const k = this.keyOfDraft(e);
      this.remember(`${k}\u0000${e.entry_id}`);
      this.inFlight.set(k, (this.inFlight.get(k) ?? 0) + 1);
    }
    return rows;
  }

  private remember(k: string): void {
    this.recent.set(k, true);
    const max = this.opts.recentIds ?? 100_000;
    if (this.recent.size > max) this.recent.delete(this.recent.keys().next().value as string);
  }

  /** `col IN (…)` per chain column over `chains` (a superset of the chains: callers match rows exactly). */
  private inLists(chains: readonly (readonly string[])[]): string {
    return this.space.cols.map((c, i) => `${c} IN (${[...new Set(chains.map((v) => v[i]!))].map(sqlString).join(',')})`).join(' AND ');
  }

  private async storedIds(drafts: LedgerDraft[]): Promise<Set<string>> {
    const out = new Set<string>();
    const cols = this.space.cols.join(', ');
    // In slices of bounded SQL size: a whole fetched batch (thousands of drafts, long ids) would exceed
    // ClickHouse's max_query_size, an error no retry cures (the partition would stall for ever).
    for (const part of bySqlSize(drafts, (d) => this.space.ofDraft(d).reduce((n, v) => n + v.length + 4, 0) + d.entry_id.length + 4)) {
      const ids = [...new Set(part.map((d) => d.entry_id))].map(sqlString).join(',');
      const rows = await this.store.query<Record<string, string>>(
        `SELECT DISTINCT ${cols}, entry_id FROM ${this.store.table(this.space.ids)} WHERE ${this.inLists(part.map((d) => this.space.ofDraft(d)))} AND entry_id IN (${ids})`,
      );
      for (const r of rows) out.add(`${this.keyOfRow(r)}\u0000${r.entry_id}`);
    }
    return out;
  }

  private async loadHeads(all: string[][]): Promise<void> {
    for (const chains of bySqlSize(all, (a) => a.reduce((n, v) => n + v.length + 4, 0))) await this.loadHeadsOf(chains);
  }

  private async loadHeadsOf(chains: string[][]): Promise<void> {
    if (chains.length === 0) return;
    const cols = this.space.cols.join(', ');
    // Aliases must not shadow columns: ClickHouse resolves `argMax(hash, seq)` against an alias named seq.
    const rows = await this.store.query<Record<string, string>>(
      `SELECT ${cols}, max(seq) AS head_seq, argMax(hash, seq) AS head_hash, argMax(ts_ms, seq) AS head_ts, uniqExact(seq) AS head_n
       FROM ${this.store.table(this.space.ledger)} WHERE ${this.inLists(chains)} GROUP BY ${cols}`,
    );
    const found = new Map(rows.map((r) => [this.keyOfRow(r), r]));
    const wanted = chains.map((c) => ({ values: c, key: chainKey(c) }));
    await this.completeIds(wanted.flatMap((w) => {
      const r = found.get(w.key);
      return r ? [{ values: w.values, key: w.key, head: Number(r.head_seq), n: Number(r.head_n) }] : [];
    }));
    for (const w of wanted) {
      const r = found.get(w.key);
      this.chain.setHead(w.key, r ? { agent_id: String(r.agent_id), seq: Number(r.head_seq), hash: r.head_hash!, ts_ms: Number(r.head_ts) } : null);
    }
  }

  /** Copies into the id index the ids of entries above each chain's highest indexed seq, up to its head. */
  private async completeIds(heads: { values: string[]; key: string; head: number; n: number }[]): Promise<void> {
    if (heads.length === 0) return;
    const cols = this.space.cols.join(', ');
    // The index is complete when it holds as many distinct seqs as the ledger, up to the same head. Otherwise
    // its highest seq is a mark only if every seq below it is indexed too (a repair copy that failed half way,
    // INSERT … SELECT writing block by block, may have indexed higher seqs and not lower ones); a ledger with
    // a seq gap of its own (an operator's delete) is then copied whole, and complete from then on.
    const marks = await this.store.query<Record<string, string>>(
      `SELECT ${cols}, max(seq) AS ids_seq, uniqExact(seq) AS ids_n FROM ${this.store.table(this.space.ids)}
       WHERE ${this.inLists(heads.map((h) => h.values))} GROUP BY ${cols}`,
    );
    const of = new Map(heads.map((h) => [h.key, h]));
    const mark = new Map(
      marks.map((m) => {
        const seq = Number(m.ids_seq);
        const n = Number(m.ids_n);
        const h = of.get(this.keyOfRow(m));
        return [this.keyOfRow(m), h && seq === h.head && n === h.n ? seq : n === seq ? seq : 0];
      }),
    );
    const behind = heads.filter((h) => (mark.get(h.key) ?? 0) < h.head);
    for (const part of bySqlSize(behind, (h) => h.values.reduce((n, v) => n + v.length + 16, 0) + 32)) {
      const where = part.map((h) => `(${this.space.cols.map((c, i) => `${c} = ${sqlString(h.values[i]!)}`).join(' AND ')} AND seq > ${mark.get(h.key) ?? 0})`).join(' OR ');
      await this.store.command(
        `INSERT INTO ${this.store.table(this.space.ids)} (${cols}, entry_id, seq) SELECT ${cols}, entry_id, seq FROM ${this.store.table(this.space.ledger)} WHERE ${where}`,
      );
    }
  }
}

/**
 * Query text per statement stays under this many bytes of list items (ClickHouse's max_query_size is 256 KiB by
 * default; quoting can double a string's length).
 */
export const MAX_SQL_LIST_BYTES = 64 * 1024;

/** `items` in consecutive slices whose estimated SQL size (`size`, doubled for escaping) stays under the bound. */
export function bySqlSize<T>(items: readonly T[], size: (t: T) => number, max = MAX_SQL_LIST_BYTES): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const it of items) {
    const n = 2 * size(it);
    if (cur.length > 0 && bytes + n > max) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(it);
    bytes += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
