/**
 * The ledger's storage side: the sink is the single writer of every agent's chain. Heads are loaded from
 * ClickHouse on first use (and after a rebalance), entries already stored are skipped (redelivery), and
 * appends are serialised so concurrent partition handlers never interleave a chain.
 */
import { canonicalize, LedgerChain, isLedgerEntryType, type LedgerDraft, type LedgerEntry, type LedgerSigner } from '../../engine/ledger/index.js';
import { StewardError } from '../../errors.js';
import { sqlString, type ClickHouseStore } from './client.js';
import { ledgerEntryFromRow, ledgerRow, type LedgerRow } from './rows.js';

const LEDGER_COLUMNS = 'entry_id, agent_id, tenant, seq, ts_ms, type, payload, prev_hash, hash, signature, kid';

/** Reads entries in chain order (raw rows, no FINAL: the verifier must see every stored copy). */
export async function readLedger(store: ClickHouseStore, agentId?: string): Promise<LedgerEntry[]> {
  const where = agentId === undefined ? '' : ` WHERE agent_id = ${sqlString(agentId)}`;
  const rows = await store.query(`SELECT ${LEDGER_COLUMNS} FROM ${store.table('ledger')}${where} ORDER BY agent_id, seq`);
  return rows.map(ledgerEntryFromRow);
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
  /** entry_ids appended by this process recently: a redelivered copy inside one process is skipped without a query. */
  private readonly recent = new Map<string, true>();

  constructor(
    private readonly store: ClickHouseStore,
    signer: LedgerSigner,
    private readonly opts: {
      recentIds?: number;
      nowMs?: () => number;
      /** Signs entry hashes elsewhere (src/adapters/crypto/sign-pool.ts) instead of one by one on this thread; same key as `signer`. */
      signMany?: (hashesHex: string[]) => Promise<string[]>;
    } = {},
  ) {
    this.chain = new LedgerChain(signer);
  }

  /** Call after a consumer rebalance: another instance may have appended to the chains we cached. */
  forgetHeads(): void {
    this.queue = this.queue.then(() => {
      this.chain.forget();
      this.recent.clear();
    });
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
      const k = `${d.agent_id}\u0000${d.entry_id}`;
      if (this.recent.has(k) || inBatch.has(k)) continue;
      inBatch.add(k);
      fresh.push(d);
    }
    if (fresh.length === 0) return [];
    const stored = await this.storedIds(fresh);
    const todo = fresh.filter((d) => !stored.has(`${d.agent_id}\u0000${d.entry_id}`));
    await this.loadHeads([...new Set(todo.map((d) => d.agent_id))].filter((a) => this.chain.head(a) === undefined));
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
      for (const a of new Set(todo.map((d) => d.agent_id))) this.chain.forget(a);
      throw e;
    }
    const rows: LedgerRow[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      rows[i] = ledgerRow(e, canonicalize(e.payload) ?? '{}', now);
      this.remember(`${e.agent_id}\u0000${e.entry_id}`);
    }
    return rows;
  }

  private remember(k: string): void {
    this.recent.set(k, true);
    const max = this.opts.recentIds ?? 100_000;
    if (this.recent.size > max) this.recent.delete(this.recent.keys().next().value as string);
  }

  private async storedIds(drafts: LedgerDraft[]): Promise<Set<string>> {
    const agents = [...new Set(drafts.map((d) => d.agent_id))].map(sqlString).join(',');
    const ids = [...new Set(drafts.map((d) => d.entry_id))].map(sqlString).join(',');
    const rows = await this.store.query<{ agent_id: string; entry_id: string }>(
      `SELECT DISTINCT agent_id, entry_id FROM ${this.store.table('ledger')} WHERE agent_id IN (${agents}) AND entry_id IN (${ids})`,
    );
    return new Set(rows.map((r) => `${r.agent_id}\u0000${r.entry_id}`));
  }

  private async loadHeads(agents: string[]): Promise<void> {
    if (agents.length === 0) return;
    // Aliases must not shadow columns: ClickHouse resolves `argMax(hash, seq)` against an alias named seq.
    const rows = await this.store.query<{ agent_id: string; head_seq: string; head_hash: string; head_ts: string }>(
      `SELECT agent_id, max(seq) AS head_seq, argMax(hash, seq) AS head_hash, argMax(ts_ms, seq) AS head_ts FROM ${this.store.table('ledger')}
       WHERE agent_id IN (${agents.map(sqlString).join(',')}) GROUP BY agent_id`,
    );
    const found = new Map(rows.map((r) => [r.agent_id, r]));
    for (const a of agents) {
      const r = found.get(a);
      this.chain.setHead(a, r ? { agent_id: a, seq: Number(r.head_seq), hash: r.head_hash, ts_ms: Number(r.head_ts) } : null);
    }
  }
}
