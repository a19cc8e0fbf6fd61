// Issue #22 item 4: the ledger writer's chain-head map is bounded (least recently used heads dropped once
// their entries are stored, reloaded from ClickHouse when their agent appends again); heads of entries not
// yet stored are never dropped (a reload would fork the chain). Real ClickHouse.
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
const draft = (agent: string, n: number): LedgerDraft => ({ entry_id: `pd:${agent}-${n}`, agent_id: agent, tenant: 'acme', ts_ms: 1_700_000_000_000 + n * 1000, type: 'POLICY_DECISION', payload: { n } });

describe('ledger chain heads are LRU-capped (real ClickHouse)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_ledger_heads') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  it('200 agents through a writer capped at 16 heads: at most 16 held (plus unstored ones), every chain intact', async () => {
    const w = new LedgerWriter(store, signer, { maxHeads: 16, idsLingerMs: 1 });
    const agents = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
    for (let round = 1; round <= 3; round++) {
      for (let i = 0; i < agents.length; i += 20) {
        const rows = await w.append(agents.slice(i, i + 20).map((a) => draft(a, round)));
        await store.insert('ledger', rows);
        await w.stored(rows);
        // a batch of 20 agents is held while it is in flight; the cap applies before the next append
        expect(w.heldHeads).toBeLessThanOrEqual(16 + 20);
      }
    }
    await w.idsWritten();
    for (const a of [agents[0]!, agents[77]!, agents[199]!]) {
      const chain = await readLedger(store, a);
      expect(chain.map((e) => [e.seq, e.entry_id])).toEqual([1, 2, 3].map((n) => [n, `pd:${a}-${n}`]));
      expect(verifyLedger(chain, keys).issues).toEqual([]);
    }
  });

  it('a head whose entries are not stored yet is kept past the cap (dropping it would fork the chain)', async () => {
    const w = new LedgerWriter(store, signer, { maxHeads: 1, idsLingerMs: 1 });
    const pending = await w.append([draft('slow', 1)]); // not in ClickHouse yet
    for (let i = 0; i < 5; i++) {
      const rows = await w.append([draft(`other-${i}`, 1)]);
      await store.insert('ledger', rows);
      await w.stored(rows);
    }
    const next = await w.append([draft('slow', 2)]);
    expect(next.map((r) => [r.seq, r.prev_hash])).toEqual([[2, pending[0]!.hash]]);
    await store.insert('ledger', [...pending, ...next]);
    await w.stored([...pending, ...next]);
    await w.idsWritten();
    expect(verifyLedger(await readLedger(store, 'slow'), keys).issues).toEqual([]);
  });
});
