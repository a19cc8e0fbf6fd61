// The ledger writer's entry-id index (ledger_ids) on the real server: redelivered drafts are found there, and
// ids lost between the two inserts (a crash) or never written (entries from before the index existed) are
// restored from the ledger when a writer loads the agent's head, so nothing chains twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { LedgerWriter, readLedger } from '../../../src/adapters/clickhouse/ledger-store.js';
import { ed25519Signer, verifyLedger, type LedgerDraft } from '../../../src/engine/ledger/index.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const signer = ed25519Signer(privateKey);
const keys = { [signer.kid]: publicKey.export({ type: 'spki', format: 'pem' }).toString() };

const drafts = (agent: string, ids: number[]): LedgerDraft[] =>
  ids.map((n) => ({ entry_id: `pd:${agent}-${n}`, agent_id: agent, tenant: 'acme', ts_ms: 1_700_000_000_000 + n * 1000, type: 'POLICY_DECISION', payload: { n } }));

describe('ledger entry-id index (real ClickHouse)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_ledger_ids') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  const indexed = async (agent: string) =>
    (await store.query<{ entry_id: string; seq: string }>(`SELECT entry_id, seq FROM ${store.table('ledger_ids')} FINAL WHERE agent_id = '${agent}' ORDER BY seq`)).map(
      (r) => `${r.entry_id}@${r.seq}`,
    );

  it('a crash between the ledger insert and the id insert: the next writer restores the ids and skips the redelivered drafts', async () => {
    const a = new LedgerWriter(store, signer);
    const first = await a.append(drafts('crash', [1, 2, 3]));
    await store.insert('ledger', first);
    await a.stored(first);
    const second = await a.append(drafts('crash', [4, 5]));
    await store.insert('ledger', second); // ... and the process dies before stored(second)
    expect(await indexed('crash')).toEqual(['pd:crash-1@1', 'pd:crash-2@2', 'pd:crash-3@3']);

    // A new process: the batch of 4, 5 is redelivered, followed by a new draft.
    const b = new LedgerWriter(store, signer);
    const rows = await b.append(drafts('crash', [4, 5, 6]));
    expect(rows.map((r) => [r.entry_id, r.seq])).toEqual([['pd:crash-6', 6]]);
    await store.insert('ledger', rows);
    await b.stored(rows);
    expect(await indexed('crash')).toEqual([1, 2, 3, 4, 5, 6].map((n) => `pd:crash-${n}@${n}`));
    // An old draft redelivered much later (past any in-process memory) is still found.
    expect(await new LedgerWriter(store, signer).append(drafts('crash', [2]))).toEqual([]);
    const chain = await readLedger(store, 'crash');
    expect(chain.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(verifyLedger(chain, keys).issues).toEqual([]);
  });

  it('entries stored before the index existed are indexed on the first head load', async () => {
    const old = new LedgerWriter(store, signer);
    const rows = await old.append(drafts('legacy', [1, 2, 3, 4]));
    await store.insert('ledger', rows); // never stored(): as written by a release without ledger_ids
    expect(await indexed('legacy')).toEqual([]);
    const w = new LedgerWriter(store, signer);
    const next = await w.append(drafts('legacy', [3, 5]));
    expect(next.map((r) => [r.entry_id, r.seq])).toEqual([['pd:legacy-5', 5]]);
    expect(await indexed('legacy')).toEqual([1, 2, 3, 4].map((n) => `pd:legacy-${n}@${n}`));
  });

  it('a batch whose insert failed is discarded: its redelivery chains from what is stored, not from the lost rows', async () => {
    const w = new LedgerWriter(store, signer);
    const ok = await w.append(drafts('lost', [1, 2]));
    await store.insert('ledger', ok);
    await w.stored(ok);
    const lost = await w.append(drafts('lost', [3, 4])); // the insert of these fails for good
    await w.discard(lost);
    const again = await w.append(drafts('lost', [3, 4]));
    expect(again.map((r) => [r.entry_id, r.seq])).toEqual([['pd:lost-3', 3], ['pd:lost-4', 4]]);
    await store.insert('ledger', again);
    await w.stored(again);
    const chain = await readLedger(store, 'lost');
    expect(chain.map((e) => e.entry_id)).toEqual(['pd:lost-1', 'pd:lost-2', 'pd:lost-3', 'pd:lost-4']);
    expect(verifyLedger(chain, keys).issues).toEqual([]);
  });

  it('an index with a gap below its highest seq (a repair copy that failed half way) is completed from the start', async () => {
    const w = new LedgerWriter(store, signer);
    const rows = await w.append(drafts('gap', [1, 2, 3, 4, 5]));
    await store.insert('ledger', rows);
    // Only seqs 4 and 5 made it into the index.
    await store.insert('ledger_ids', rows.filter((r) => r.seq >= 4).map((r) => ({ agent_id: r.agent_id, entry_id: r.entry_id, seq: r.seq })));
    const next = await new LedgerWriter(store, signer).append(drafts('gap', [2, 6]));
    expect(next.map((r) => [r.entry_id, r.seq])).toEqual([['pd:gap-6', 6]]);
    expect(await indexed('gap')).toEqual([1, 2, 3, 4, 5].map((n) => `pd:gap-${n}@${n}`));
  });

  it('a ledger with a seq gap of its own is indexed once, not copied again at every head load', async () => {
    const w = new LedgerWriter(store, signer);
    const rows = await w.append(drafts('holes', [1, 2, 3, 4, 5]));
    await store.insert('ledger', rows.filter((r) => r.seq !== 3)); // seq 3 never landed (or was deleted)
    const copies = async () => Number((await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('ledger_ids')} WHERE agent_id = 'holes'`))[0].n);
    expect(await new LedgerWriter(store, signer).append(drafts('holes', [6]))).toHaveLength(1);
    expect(await indexed('holes')).toEqual([1, 2, 4, 5].map((n) => `pd:holes-${n}@${n}`));
    const after = await copies();
    // Two more writers (restarts, rebalances) load the head: the index is complete, nothing is copied.
    for (let i = 0; i < 2; i++) expect(await new LedgerWriter(store, signer).append(drafts('holes', [2]))).toEqual([]);
    expect(await copies()).toBeLessThanOrEqual(after);
  });

  it('a 20 000-draft backlog of 2 000 agents with long ids: ids and heads are queried in bounded slices (issue #22 item 1)', async () => {
    const long = 'x'.repeat(200);
    const backlog: LedgerDraft[] = [];
    for (let i = 0; i < 20_000; i++) {
      const agent = `bulk-${long}-${i % 2000}`;
      backlog.push({ entry_id: `pd:${long}-${i}`, agent_id: agent, tenant: 'acme', ts_ms: 1_700_000_000_000 + i, type: 'POLICY_DECISION', payload: { i } });
    }
    // one SQL list of these would be ~8.4 MB, far over max_query_size (256 KiB): the writer used to retry that for ever
    const w = new LedgerWriter(store, signer);
    const rows = await w.append(backlog);
    expect(rows).toHaveLength(20_000);
    await store.insert('ledger', rows);
    await w.stored(rows);
    // a new process with the same backlog redelivered: everything is found, nothing chains twice
    expect(await new LedgerWriter(store, signer).append(backlog)).toEqual([]);
    const one = await readLedger(store, `bulk-${long}-7`);
    expect(one.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, k) => k + 1));
    expect(verifyLedger(one, keys).issues).toEqual([]);
  }, 180_000);
});
