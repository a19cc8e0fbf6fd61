/**
 * Drill-down: the traces behind one point of an interventions series, and one trace's full story — its
 * decision, verdict, trust-debt changes, gate results and its POLICY_DECISION ledger entry with a
 * verification status. The status comes from the ledger verifier `steward ledger verify` runs
 * (ChainVerifier): the agent's chain is read page by page up to the entry, so a tampered entry before it
 * (edited, deleted, reordered, a forged signature) shows as well as one at it.
 */
import type { KeyObject } from 'node:crypto';
import { ChainVerifier, entryHash, type LedgerEntry, type LedgerIssue } from '../../engine/ledger/index.js';
import type { ClickHouseStore } from '../clickhouse/client.js';
import { readLedgerPages } from '../clickhouse/ledger-store.js';
import { ledgerEntryFromRow } from '../clickhouse/rows.js';
import { sqlFor, type Dimension } from './panel-sql.js';
import type { DashboardRange } from './params.js';

export interface LedgerStatus {
  /**
   * verified: hashes, links and signatures intact from genesis up to this entry; tampered: an issue at or
   * before it; hash_only: no trusted keys configured, the entry's own hash was recomputed and matches
   * (hash_mismatch when not); missing: no entry for the trace.
   */
  status: 'verified' | 'tampered' | 'hash_only' | 'hash_mismatch' | 'missing';
  issues: LedgerIssue[];
  checked_entries: number;
}

export interface TraceStory {
  trace_id: string;
  decision: Record<string, unknown> | null;
  verdict: Record<string, unknown> | null;
  debt_changes: Record<string, unknown>[];
  gate_results: Record<string, unknown>[];
  ledger: { entry: Record<string, unknown> | null; verification: LedgerStatus };
}

export function pointTraces(store: ClickHouseStore, r: DashboardRange, dim: Dimension, key: string, bucketStartMs: number, limit: number) {
  return store.query(sqlFor(store.database).pointTraces(r, dim, key, bucketStartMs, limit));
}

export async function traceStory(store: ClickHouseStore, traceId: string, keys: Map<string, KeyObject> | undefined): Promise<TraceStory> {
  const sql = sqlFor(store.database);
  const [decisions, verdicts, debt, gate] = await Promise.all([
    store.query(sql.decision(traceId)),
    store.query(sql.verdict(traceId)),
    store.query(sql.debtChanges(traceId)),
    store.query(sql.gateEvents(traceId)),
  ]);
  const decision = decisions[0] ?? null;
  const agent = String(decision?.agent_id ?? verdicts[0]?.agent_id ?? '');
  const entries = agent === '' ? [] : await store.query<Record<string, unknown>>(sql.ledgerEntry(agent, traceId));
  const entry = entries[0] ?? null;
  const verification = entry ? await verifyUpTo(store, ledgerEntryFromRow(entry), keys) : { status: 'missing' as const, issues: [], checked_entries: 0 };
  return { trace_id: traceId, decision, verdict: verdicts[0] ?? null, debt_changes: debt, gate_results: gate, ledger: { entry, verification } };
}

async function verifyUpTo(store: ClickHouseStore, entry: LedgerEntry, keys: Map<string, KeyObject> | undefined): Promise<LedgerStatus> {
  if (!keys || keys.size === 0) {
    const ok = entryHash(entry) === entry.hash;
    return { status: ok ? 'hash_only' : 'hash_mismatch', issues: [], checked_entries: 1 };
  }
  const v = new ChainVerifier(entry.agent_id, keys);
  let checked = 0;
  for await (const page of readLedgerPages(store, entry.agent_id)) {
    const upTo = page.filter((e) => e.seq <= entry.seq);
    v.add(upTo);
    checked += upTo.length;
    if (upTo.length < page.length) break;
  }
  const issues = v.finish().issues.filter((i) => i.seq <= entry.seq);
  return { status: issues.length === 0 ? 'verified' : 'tampered', issues, checked_entries: checked };
}
