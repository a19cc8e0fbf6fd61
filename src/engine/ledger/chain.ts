/**
 * Appends entries to per-agent hash chains. The chain head (last seq, hash, time) is state owned by the
 * caller: pass it in, or let the chain keep heads in memory after `setHead` (e.g. loaded from storage).
 */
import { StewardError } from '../../errors.js';
import { entryHash, type LedgerSigner } from './crypto.js';
import { GENESIS_HASH, isLedgerEntryType, type ChainHead, type LedgerDraft, type LedgerEntry } from './types.js';

export function headOf(e: Pick<LedgerEntry, 'agent_id' | 'seq' | 'hash' | 'ts_ms'>): ChainHead {
  return { agent_id: e.agent_id, seq: e.seq, hash: e.hash, ts_ms: e.ts_ms };
}

/** Which chain a draft extends: by default its agent's (one chain per agent). */
export type ChainKeyOf = (d: Pick<LedgerDraft, 'agent_id' | 'tenant' | 'payload'>) => string;

const byAgent: ChainKeyOf = (d) => d.agent_id;

export class LedgerChain {
  private readonly heads = new Map<string, ChainHead>();
  private readonly keyOf: ChainKeyOf;

  /**
   * `keyOf` names a draft's chain: the agent (default), or e.g. a run's chain of that agent (spec-decisions D30),
   * whose heads are kept apart from the agent's own chain. A chain holds one agent's entries either way.
   */
  constructor(
    private readonly signer: LedgerSigner,
    keyOf?: ChainKeyOf,
  ) {
    this.keyOf = keyOf ?? byAgent;
  }

  get kid(): string {
    return this.signer.kid;
  }

  /** The head this chain would append after; undefined means "unknown" (load it) — use `setHead(agent, null)` for an empty chain. */
  head(agentId: string): ChainHead | null | undefined {
    return this.heads.has(agentId) ? (this.heads.get(agentId) ?? null) : undefined;
  }

  setHead(agentId: string, head: ChainHead | null): void {
    if (head && this.keyOf === byAgent && head.agent_id !== agentId) throw new StewardError('STEWARD_LEDGER_CHAIN', `head of ${head.agent_id} given for ${agentId}`);
    this.touch(agentId, head as ChainHead);
  }

  /** Heads held (known agents, empty chains included). */
  get size(): number {
    return this.heads.size;
  }

  /**
   * Drops the least recently used heads until at most `max` remain, skipping agents `busy` names (heads whose
   * entries may not be stored yet: forgetting one would reload an older head and fork the chain). Returns
   * how many were dropped; a dropped head is loaded again when its agent next appends.
   */
  evict(max: number, busy: (agentId: string) => boolean): number {
    let dropped = 0;
    for (const a of this.heads.keys()) {
      if (this.heads.size <= max) break;
      if (busy(a)) continue;
      this.heads.delete(a);
      dropped++;
    }
    return dropped;
  }

  /** Sets a head and makes it the most recently used (a Map iterates in insertion order). */
  private touch(agentId: string, head: ChainHead): void {
    this.heads.delete(agentId);
    this.heads.set(agentId, head);
  }

  /** Forget cached heads (after a consumer rebalance another writer may have appended). */
  forget(agentId?: string): void {
    if (agentId === undefined) this.heads.clear();
    else this.heads.delete(agentId);
  }

  /**
   * Builds the next entry after `head` (null/undefined = empty chain) and records it as the new head.
   * Time order (ACM §11) is kept by clamping ts_ms to the head's time; the original time stays in the payload.
   */
  append(draft: LedgerDraft, head: ChainHead | null | undefined = this.heads.get(this.keyOf(draft))): LedgerEntry {
    const e = this.next(draft, head);
    // Signed before the head moves: a signer that throws leaves the chain as it was.
    const entry: LedgerEntry = { ...e, signature: this.signer.sign(e.hash) };
    this.touch(this.keyOf(draft), headOf(entry));
    return entry;
  }

  /**
   * `append` without the signature: the entry's hash is final (the signature covers it and nothing hashes
   * the signature), so a caller may sign many entries elsewhere, e.g. on other threads, and add them after.
   */
  appendUnsigned(draft: LedgerDraft, head: ChainHead | null | undefined = this.heads.get(this.keyOf(draft))): Omit<LedgerEntry, 'signature'> {
    const e = this.next(draft, head);
    this.touch(this.keyOf(draft), headOf(e));
    return e;
  }

  /** The entry after `head`, hashed; the head is not moved. */
  private next(draft: LedgerDraft, head: ChainHead | null | undefined): Omit<LedgerEntry, 'signature'> {
    if (!isLedgerEntryType(draft.type)) throw new StewardError('STEWARD_LEDGER_CHAIN', `unknown ledger entry type ${String(draft.type)}`);
    if (!draft.agent_id || !draft.entry_id) throw new StewardError('STEWARD_LEDGER_CHAIN', 'ledger entry needs agent_id and entry_id');
    if (!Number.isSafeInteger(draft.ts_ms) || draft.ts_ms < 0) throw new StewardError('STEWARD_LEDGER_CHAIN', `ledger entry ${draft.entry_id}: ts_ms must be a non-negative integer`);
    if (head && head.agent_id !== draft.agent_id) throw new StewardError('STEWARD_LEDGER_CHAIN', `head of ${head.agent_id} given for ${draft.agent_id}`);
    const clamped = head && draft.ts_ms < head.ts_ms;
    const payload = clamped ? { ...draft.payload, event_ts_ms: draft.ts_ms } : draft.payload;
    const unsigned = {
      entry_id: draft.entry_id,
      agent_id: draft.agent_id,
      tenant: draft.tenant,
      seq: head ? head.seq + 1 : 1,
      ts_ms: clamped ? head.ts_ms : draft.ts_ms,
      type: draft.type,
      payload,
      prev_hash: head ? head.hash : GENESIS_HASH,
      kid: this.signer.kid,
    };
    return { ...unsigned, hash: entryHash(unsigned) };
  }
}
