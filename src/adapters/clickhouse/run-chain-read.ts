/**
 * Reading ACM runs' own chains (acm_ledger, spec-decisions D30) for `steward ledger verify`: which chains there
 * are, and one chain's entries in seq order (a run is short next to an agent's whole chain: one read, no pages).
 */
import type { LedgerEntry } from '../../engine/ledger/index.js';
import { sqlString, type ClickHouseStore } from './client.js';
import { ledgerEntryFromRow } from './rows.js';

const LEDGER_COLUMNS = 'entry_id, agent_id, tenant, seq, ts_ms, type, payload, prev_hash, hash, signature, kid';

/** A run's chain of one agent in `acm_ledger` (spec-decisions D30). */
export interface RunChainId {
  tenant: string;
  run_id: string;
  agent_id: string;
}

export async function runChains(store: ClickHouseStore, runId?: string): Promise<RunChainId[]> {
  const where = runId === undefined ? '' : ` WHERE run_id = ${sqlString(runId)}`;
  return store.query<RunChainId>(`SELECT DISTINCT tenant, run_id, agent_id FROM ${store.table('acm_ledger')}${where} ORDER BY tenant, run_id, agent_id`);
}

/** One run chain's entries in seq order. */
export async function readRunChain(store: ClickHouseStore, c: RunChainId): Promise<LedgerEntry[]> {
  const rows = await store.query(
    `SELECT ${LEDGER_COLUMNS} FROM ${store.table('acm_ledger')} WHERE tenant = ${sqlString(c.tenant)} AND run_id = ${sqlString(c.run_id)} AND agent_id = ${sqlString(c.agent_id)} ORDER BY seq`,
  );
  return rows.map(ledgerEntryFromRow);
}
