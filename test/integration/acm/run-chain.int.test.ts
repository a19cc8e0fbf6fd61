// ACM runs' own chains (acm_ledger, spec-decisions D30) on the real server: one chain per run and agent from
// genesis, apart from each other and from the agent's chain; heads reload in a new writer (a restart), ids lost
// between the two inserts are restored, a redelivered draft is skipped, and `steward ledger verify` checks the
// run chains (exit 1 naming the run when one is tampered with).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import type { AcmLedgerRow } from '../../../src/adapters/clickhouse/rows.js';
import { LedgerWriter, readLedger, RUN_CHAINS } from '../../../src/adapters/clickhouse/ledger-store.js';
import { readRunChain, runChains } from '../../../src/adapters/clickhouse/run-chain-read.js';
import { run as ledgerCommand } from '../../../src/cli/commands/ledger.js';
import { ed25519Signer, GENESIS_HASH, verifyLedger, type LedgerDraft } from '../../../src/engine/ledger/index.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const signer = ed25519Signer(privateKey);
const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
const keys = { [signer.kid]: publicPem };

const drafts = (agent: string, run: string, ids: number[], tenant = 'acme'): LedgerDraft[] =>
  ids.map((n) => ({ entry_id: `pd:${run}-${agent}-${n}#00`, agent_id: agent, tenant, ts_ms: 1_700_000_000_000 + n * 1000, type: 'POLICY_DECISION', payload: { run_id: run, n } }));

describe('ACM run chains (real ClickHouse)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_run_chain') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  const write = async (w: LedgerWriter, d: LedgerDraft[], index = true) => {
    const rows = await w.append(d);
    await store.insert('acm_ledger', rows);
    if (index) await w.stored(rows);
    return rows as AcmLedgerRow[];
  };

  it('chains each run (and agent) from genesis, continues after a restart and skips redelivered drafts', async () => {
    const a = new LedgerWriter(store, signer, { space: RUN_CHAINS, idsLingerMs: 1 });
    // Two runs of one agent, an approver's event in the first, the same run id under another tenant.
    const first = await write(a, [...drafts('agent-1', 'run-1', [1, 2]), ...drafts('alice', 'run-1', [1]), ...drafts('agent-1', 'run-2', [1]), ...drafts('agent-1', 'run-1', [3], 'other')]);
    expect(first.map((r) => [r.tenant, r.run_id, r.agent_id, r.seq, r.prev_hash === GENESIS_HASH])).toEqual([
      ['acme', 'run-1', 'agent-1', 1, true],
      ['acme', 'run-1', 'agent-1', 2, false],
      ['acme', 'run-1', 'alice', 1, true],
      ['acme', 'run-2', 'agent-1', 1, true],
      ['other', 'run-1', 'agent-1', 1, true],
    ]);
    // The agent chains (ledger) are untouched.
    expect(await readLedger(store, 'agent-1')).toEqual([]);
    // Stored without its id index (a crash between the two inserts), then a new process: the redelivered draft is
    // skipped and the chain continues from the stored head.
    await write(a, drafts('agent-1', 'run-1', [4]), false);
    const b = new LedgerWriter(store, signer, { space: RUN_CHAINS, idsLingerMs: 1 });
    const rows = await write(b, [...drafts('agent-1', 'run-1', [2, 4, 5]), ...drafts('agent-1', 'run-2', [2])]);
    expect(rows.map((r) => [r.run_id, r.entry_id, r.seq])).toEqual([
      ['run-1', 'pd:run-1-agent-1-5#00', 4],
      ['run-2', 'pd:run-2-agent-1-2#00', 2],
    ]);
    await b.idsWritten();
    const ids = await store.query<{ entry_id: string }>(`SELECT entry_id FROM ${store.table('acm_ledger_ids')} FINAL WHERE tenant = 'acme' AND run_id = 'run-1' AND agent_id = 'agent-1' ORDER BY seq`);
    expect(ids.map((r) => r.entry_id)).toEqual([1, 2, 4, 5].map((n) => `pd:run-1-agent-1-${n}#00`));
    const chain = await readRunChain(store, { tenant: 'acme', run_id: 'run-1', agent_id: 'agent-1' });
    expect(chain.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(verifyLedger(chain, keys).issues).toEqual([]);
    expect((await runChains(store)).length).toBe(4);
  });

  it('steward ledger verify checks the run chains and names the run of a tampered entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'run-chain-keys-'));
    const keyFile = join(dir, 'ledger.pub.pem');
    writeFileSync(keyFile, publicPem);
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => (out.push(String(s)), true));
    try {
      const args = ['verify', '--keys', keyFile, '--url', services().clickhouseUrl, '--database', store.database];
      expect(await ledgerCommand(args)).toBe(0);
      expect(out.join('')).toMatch(/run chain\(s\), 0 problem\(s\) — intact/);
      // A forged copy of run-2's first entry with another payload.
      const [e] = await readRunChain(store, { tenant: 'acme', run_id: 'run-2', agent_id: 'agent-1' });
      await store.insert('acm_ledger', [{ ...e!, payload: JSON.stringify({ n: 99, run_id: 'run-2' }), run_id: 'run-2', ingested_at_ms: 1 }]);
      out.length = 0;
      expect(await ledgerCommand(args)).toBe(1);
      expect(out.join('')).toMatch(/^run run-2 \(tenant acme\) agent agent-1 seq 1 entry pd:run-2-agent-1-1#00: (inserted|edited)/m);
    } finally {
      spy.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
