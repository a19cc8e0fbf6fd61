/**
 * `steward replay export` from ClickHouse (docs/acm.md "Replay bundles"): a ReplaySource over a run's records
 * (`acm_run_records`: traces as received, PDP request and response lines, context versions) and its own chains
 * (`acm_ledger`, spec-decisions D30). The policy files and the public keys are the exporter's to give (the
 * deployment's blueprint directory and signing keys); the signed `policy_digest` of every POLICY_DECISION says
 * whether they are still the ones the run was decided under.
 *
 * Lines are kept as recorded: the POLICY_DECISION entries sign the sha256 of the exact request and response
 * lines, and the bundle writes a record by JSON.stringify, which gives a JSON.stringify'd line back unchanged.
 */
import { entryIdOf } from '../../engine/ledger/acm-entries.js';
import { canonicalize } from '../../engine/ledger/crypto.js';
import type { LedgerEntry } from '../../engine/ledger/types.js';
import type { BundleKey, PolicyFiles, ReplayRun, ReplaySource, RunRecord } from '../../engine/acm/index.js';
import type { ContextVersion } from '../../engine/acm/context.js';
import type { PolicyRequestRecord, PolicyResponseRecord } from '../../engine/acm/pdp.js';
import type { Trace } from '../../engine/types.js';
import { StewardError } from '../../errors.js';
import { sqlString, type ClickHouseStore } from './client.js';
import { RUN_CHAINS } from './ledger-store.js';
import { ledgerEntryFromRow } from './rows.js';

export type RunRecordKind = 'trace' | 'request' | 'response' | 'context';

export interface RunRecordRow {
  tenant: string;
  run_id: string;
  kind: RunRecordKind;
  seq: number;
  agent_id: string;
  trace_id: string;
  line: string;
  ts_ms: number;
  ingested_at_ms: number;
}

const LEDGER_COLUMNS = 'entry_id, agent_id, tenant, seq, ts_ms, type, payload, prev_hash, hash, signature, kid';

/** The acm_run_records rows of a collected run (RunCollector's RunRecord: what `eval --bundles` and a stage collect). */
export function runRecordRows(r: RunRecord, ingestedAtMs: number): RunRecordRow[] {
  const base = { tenant: r.tenant, run_id: r.run_id, ingested_at_ms: ingestedAtMs };
  const rows: RunRecordRow[] = r.traces.map((t, i) => ({ ...base, kind: 'trace', seq: i + 1, agent_id: t.trace.agent_id, trace_id: t.trace.trace_id, line: t.line, ts_ms: t.now_ms }));
  const traceAt = (line: number) => r.traces[line - 1];
  for (const q of r.requests) rows.push({ ...base, kind: 'request', seq: q.seq, agent_id: traceAt(q.trace_line)?.trace.agent_id ?? r.agent_id, trace_id: q.trace_id, line: JSON.stringify(q), ts_ms: q.now_ms });
  const reqOf = new Map(r.requests.map((q) => [q.seq, q]));
  for (const s of r.responses) {
    const q = reqOf.get(s.seq);
    rows.push({ ...base, kind: 'response', seq: s.seq, agent_id: (q && traceAt(q.trace_line)?.trace.agent_id) ?? r.agent_id, trace_id: s.trace_id, line: JSON.stringify(s), ts_ms: q?.now_ms ?? 0 });
  }
  r.contexts.forEach((c, i) => rows.push({ ...base, kind: 'context', seq: i + 1, agent_id: r.agent_id, trace_id: c.trace_id ?? '', line: JSON.stringify(c), ts_ms: r.traces[0]?.now_ms ?? 0 }));
  return rows;
}

/** Stores a collected run: its records and its ledger entries in the run chains (what the stream writes piecewise). */
export async function storeRunRecord(store: ClickHouseStore, r: RunRecord, ingestedAtMs: number): Promise<void> {
  await store.insert('acm_run_records', runRecordRows(r, ingestedAtMs));
  if (r.ledger.length > 0) await store.insert('acm_ledger', r.ledger.map((e) => RUN_CHAINS.row(e, canonicalize(e.payload) ?? '{}', ingestedAtMs)));
}

/**
 * The run-record halves the sink's join put aside (kinds `pending`/`answer`) for these events; the caller matches
 * them by event id (consumers/run-record-join.ts).
 */
export async function stagedRunParts(store: ClickHouseStore, keys: { tenant: string; run_id: string; trace_id: string }[]): Promise<unknown[]> {
  if (keys.length === 0) return [];
  const list = (f: (k: (typeof keys)[number]) => string) => [...new Set(keys.map(f))].map(sqlString).join(',');
  const rows = await store.query<{ line: string }>(
    `SELECT line FROM ${store.table('acm_run_records')} FINAL WHERE kind IN ('pending', 'answer') AND tenant IN (${list((k) => k.tenant)}) AND run_id IN (${list((k) => k.run_id)}) AND trace_id IN (${list((k) => k.trace_id)})`,
  );
  return rows.map((r) => JSON.parse(r.line) as unknown);
}

export interface ClickHouseReplaySourceOptions {
  policy: PolicyFiles;
  keys: BundleKey[];
  engine?: { name: string; version: string };
  /** Only this tenant's run (a run id may repeat across tenants: without it such a run is refused as ambiguous). */
  tenant?: string;
}

export class ClickHouseReplaySource implements ReplaySource {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly o: ClickHouseReplaySourceOptions,
  ) {}

  async run(runId: string): Promise<ReplayRun | undefined> {
    const where = `run_id = ${sqlString(runId)}${this.o.tenant !== undefined ? ` AND tenant = ${sqlString(this.o.tenant)}` : ''}`;
    const rows = await this.store.query<{ tenant: string; kind: RunRecordKind; seq: string; line: string; ts_ms: string }>(
      `SELECT tenant, kind, seq, line, ts_ms FROM ${this.store.table('acm_run_records')} FINAL WHERE ${where} ORDER BY tenant, kind, seq`,
    );
    if (rows.length === 0) return undefined;
    const tenants = [...new Set(rows.map((r) => r.tenant))];
    if (tenants.length > 1) throw new StewardError('STEWARD_USAGE', `run ${runId} exists under ${tenants.length} tenants (${tenants.join(', ')}): name one with --tenant`);
    const tenant = tenants[0]!;
    const of = (kind: RunRecordKind) => rows.filter((r) => r.kind === kind);
    const traces = of('trace').map((r) => ({ line: r.line, trace: JSON.parse(r.line) as Trace, now_ms: Number(r.ts_ms) }));
    const requests = of('request').map((r) => JSON.parse(r.line) as PolicyRequestRecord);
    const responses = of('response').map((r) => JSON.parse(r.line) as PolicyResponseRecord);
    // The stream writes a context version with every event that recorded or bound it: the first row counts.
    const seenContexts = new Set<string>();
    const contexts = of('context')
      .map((r) => JSON.parse(r.line) as ContextVersion)
      .filter((c) => !seenContexts.has(`${c.id}@${c.version}`) && seenContexts.add(`${c.id}@${c.version}`) !== undefined);
    const all = (
      await this.store.query(
        `SELECT ${LEDGER_COLUMNS} FROM ${this.store.table('acm_ledger')} WHERE tenant = ${sqlString(tenant)} AND run_id = ${sqlString(runId)} ORDER BY agent_id, seq`,
      )
    ).map(ledgerEntryFromRow);
    // Exact copies are one entry stored twice (as `ledger verify` reads them); any other copy stays, for the verifier to name.
    const seen = new Set<string>();
    const entries = all.filter((e) => {
      const id = JSON.stringify([e.entry_id, e.agent_id, e.tenant, e.seq, e.ts_ms, e.type, e.prev_hash, e.hash, e.signature, e.kid, e.payload]);
      return !seen.has(id) && seen.add(id) !== undefined;
    });
    const record: RunRecord = { run_id: runId, agent_id: traces[0]?.trace.agent_id ?? entries[0]?.agent_id ?? '', tenant, traces, requests, responses, ledger: inEventOrder(entries, requests), contexts };
    return { record, policy: this.o.policy, keys: this.o.keys, ...(this.o.engine ? { engine: this.o.engine } : {}) };
  }
}

/**
 * The entries in the order `eval --bundles` appends them: by the event they record (its request's seq; an entry
 * is `<kind>:<event id>`, spec-decisions D30), its POLICY_DECISION first, then by chain seq. The chains hold one
 * agent each, so this interleaves an approver's entries where its events were.
 */
function inEventOrder(entries: LedgerEntry[], requests: PolicyRequestRecord[]): LedgerEntry[] {
  const eventSeq = new Map<string, number>();
  for (const q of requests) eventSeq.set(entryIdOf('', { trace_id: q.trace_id, event_id: q.event_id }).slice(1), q.seq);
  const key = (e: LedgerEntry): [number, number, number] => {
    const ev = e.entry_id.slice(e.entry_id.indexOf(':') + 1);
    return [eventSeq.get(ev) ?? Number.MAX_SAFE_INTEGER, e.type === 'POLICY_DECISION' ? 0 : 1, e.seq];
  };
  return entries
    .map((e) => ({ e, k: key(e) }))
    .sort((a, b) => a.k[0] - b.k[0] || a.k[1] - b.k[1] || a.k[2] - b.k[2] || (a.e.agent_id < b.e.agent_id ? -1 : a.e.agent_id > b.e.agent_id ? 1 : 0))
    .map((x) => x.e);
}
