// Issue #22 item 10: `steward ledger verify` streams an agent's chain page by page (ChainVerifier over
// readLedgerPages) and finds what the whole-chain verifier finds, also at page boundaries. Real ClickHouse.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { LedgerWriter, readLedger, readLedgerPages } from '../../../src/adapters/clickhouse/ledger-store.js';
import { ChainVerifier, ed25519Signer, verifyLedger, type LedgerDraft } from '../../../src/engine/ledger/index.js';
import type { LedgerRow } from '../../../src/adapters/clickhouse/tables.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const signer = ed25519Signer(privateKey);
const keys = { [signer.kid]: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
const draft = (agent: string, n: number): LedgerDraft => ({ entry_id: `pd:${agent}-${n}`, agent_id: agent, tenant: 'acme', ts_ms: 1_700_000_000_000 + n * 1000, type: 'POLICY_DECISION', payload: { n } });

describe('ledger verify, page by page (real ClickHouse)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_ledger_pages') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  const cases: Record<string, (rows: LedgerRow[]) => LedgerRow[]> = {
    intact: (r) => r,
    'edited at a page boundary': (r) => r.map((x) => (x.seq === 10 ? { ...x, payload: '{"n":999}' } : x)),
    'deleted at a page boundary': (r) => r.filter((x) => x.seq !== 11),
    'redelivered copies across a boundary': (r) => [...r, ...r.filter((x) => x.seq >= 9 && x.seq <= 12)],
    'a forged second copy of a boundary seq': (r) => [...r, { ...r[9]!, entry_id: 'evil', payload: '{"evil":1}' }],
    'time order broken in the last page': (r) => r.map((x) => (x.seq === 55 ? { ...x, ts_ms: 1 } : x)),
  };

  for (const [name, tamper] of Object.entries(cases)) {
    it(`${name}: same result as the whole chain`, async () => {
      const agent = `pages-${name.replace(/\W+/g, '-')}`;
      const w = new LedgerWriter(store, signer);
      const rows = await w.append(Array.from({ length: 57 }, (_, i) => draft(agent, i + 1)));
      await store.insert('ledger', tamper(rows));
      const whole = verifyLedger(await readLedger(store, agent), keys);
      const v = new ChainVerifier(agent, keys);
      let pages = 0;
      for await (const page of readLedgerPages(store, agent, 10)) {
        expect(page.length).toBeLessThanOrEqual(20);
        v.add(page);
        pages++;
      }
      const paged = v.finish();
      expect(pages).toBeGreaterThanOrEqual(5);
      const norm = (r: typeof whole) => ({ ok: r.ok, entries: r.entries, heads: r.heads, issues: r.issues.map((i) => `${i.seq}:${i.kind}`).sort() });
      expect(norm(paged)).toEqual(norm(whole));
      expect(paged.ok).toBe(name === 'intact' || name === 'redelivered copies across a boundary');
    });
  }

  it('anchors: a truncated tail and a rewritten anchored entry are found', async () => {
    const agent = 'pages-anchor';
    const w = new LedgerWriter(store, signer);
    const rows = await w.append(Array.from({ length: 30 }, (_, i) => draft(agent, i + 1)));
    await store.insert('ledger', rows.slice(0, 25));
    const run = async (anchor: { seq: number; hash: string }) => {
      const v = new ChainVerifier(agent, keys, anchor);
      for await (const page of readLedgerPages(store, agent, 7)) v.add(page);
      return v.finish().issues.map((i) => i.kind);
    };
    expect(await run({ seq: 30, hash: rows[29]!.hash })).toEqual(['truncated']);
    expect(await run({ seq: 12, hash: rows[11]!.hash })).toEqual([]);
    expect(await run({ seq: 12, hash: 'f'.repeat(64) })).toEqual(['edited']);
  });
});
