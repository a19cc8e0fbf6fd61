/**
 * Ledger writer lookup benchmark (bounded, one run) on the real ClickHouse of scripts/services.sh: agents with
 * long chains (BENCH_LEDGER_ROWS entries over BENCH_LEDGER_AGENTS agents, written with INSERT … SELECT), then
 * ledger batches of fresh drafts for those agents through LedgerWriter.append. The per-batch "already stored?"
 * lookup reads ledger_ids (keyed by agent_id, entry_id); the baseline, in the same run, is the same lookup on
 * the ledger table (sorted by agent_id, seq), which is what the writer asked before the index.
 * Prints `lookup_speedup_vs_ledger_scan=<ratio>` last (baseline time / index time per batch).
 */
import { generateKeyPairSync } from 'node:crypto';
import { ClickHouseStore, sqlString } from '../../src/adapters/clickhouse/client.js';
import { migrate } from '../../src/adapters/clickhouse/migrations.js';
import { LedgerWriter } from '../../src/adapters/clickhouse/ledger-store.js';
import { ed25519Signer, type LedgerDraft } from '../../src/engine/ledger/index.js';
import { servicesEnv } from '../sink/services-env.js';

const ROWS = Number(process.env.BENCH_LEDGER_ROWS ?? 10_000_000);
const AGENTS = Number(process.env.BENCH_LEDGER_AGENTS ?? 10);
const BATCHES = Number(process.env.BENCH_LEDGER_BATCHES ?? 20);
const BATCH = 500;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const store = new ClickHouseStore({ url: servicesEnv().clickhouse, database: `bench_ledger_${Date.now().toString(36)}`, requestTimeoutMs: 600_000 });
  try {
    await migrate(store);
    const t0 = performance.now();
    // Chains as the writer leaves them: agent k holds entries seq 1..ROWS/AGENTS, ids indexed.
    const per = Math.floor(ROWS / AGENTS);
    await store.command(
      `INSERT INTO ${store.table('ledger')} SELECT concat('pd:old-', toString(number)), concat('agent-', toString(number % ${AGENTS})), 'acme',
         intDiv(number, ${AGENTS}) + 1, 1700000000000 + number, 'POLICY_DECISION', '{"n":1}', hex(SHA256(toString(number))), hex(SHA256(toString(number + 1))),
         'sig', 'kid', 0 FROM system.numbers LIMIT ${per * AGENTS}`,
    );
    await store.command(`INSERT INTO ${store.table('ledger_ids')} SELECT agent_id, entry_id, seq FROM ${store.table('ledger')}`);
    const loadS = (performance.now() - t0) / 1000;
    const writer = new LedgerWriter(store, ed25519Signer(generateKeyPairSync('ed25519').privateKey));
    const agents = Array.from({ length: AGENTS }, (_, k) => `agent-${k}`);
    // Warm-up: the first append per agent loads its head (a whole-chain read, once per agent and rebalance).
    await writer.append(agents.map((a) => ({ entry_id: `pd:warm-${a}`, agent_id: a, tenant: 'acme', ts_ms: 1_800_000_000_000, type: 'POLICY_DECISION', payload: {} })));
    const appendMs: number[] = [];
    const indexMs: number[] = [];
    const scanMs: number[] = [];
    for (let b = 0; b < BATCHES; b++) {
      const drafts: LedgerDraft[] = Array.from({ length: BATCH }, (_, i) => ({
        entry_id: `pd:new-${b}-${i}`, agent_id: agents[i % AGENTS]!, tenant: 'acme', ts_ms: 1_800_000_000_000 + b * BATCH + i, type: 'POLICY_DECISION', payload: { i },
      }));
      const t = performance.now();
      const rows = await writer.append(drafts);
      appendMs.push(performance.now() - t);
      if (rows.length !== BATCH) throw new Error(`appended ${rows.length} of ${BATCH}`);
      // The lookup append makes (on ledger_ids), and the baseline: the same question asked of the ledger table.
      const inAgents = [...new Set(drafts.map((d) => d.agent_id))].map(sqlString).join(',');
      const inIds = drafts.map((d) => sqlString(d.entry_id)).join(',');
      const lookup = async (table: string, into: number[]) => {
        const t1 = performance.now();
        await store.query(`SELECT DISTINCT agent_id, entry_id FROM ${store.table(table)} WHERE agent_id IN (${inAgents}) AND entry_id IN (${inIds})`);
        into.push(performance.now() - t1);
      };
      // Alternating order, so neither gets the other's warm caches every time.
      if (b % 2) await lookup('ledger_ids', indexMs).then(() => lookup('ledger', scanMs));
      else await lookup('ledger', scanMs).then(() => lookup('ledger_ids', indexMs));
    }
    const idx = median(indexMs);
    const scan = median(scanMs);
    console.log(`ledger_rows=${per * AGENTS} agents=${AGENTS} batch=${BATCH} batches=${BATCHES} load_s=${loadS.toFixed(1)}`);
    console.log(`append_ms_per_batch=${median(appendMs).toFixed(1)} (lookup + chaining + signing ${BATCH} entries)`);
    console.log(`index_lookup_ms_per_batch=${idx.toFixed(1)} baseline_ledger_scan_lookup_ms_per_batch=${scan.toFixed(1)}`);
    console.log(`lookup_speedup_vs_ledger_scan=${(scan / idx).toFixed(2)}`);
  } finally {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`).catch(() => undefined);
    await store.close();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
