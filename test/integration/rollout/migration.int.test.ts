// Migration 8 (docs/rollout.md) on the real ClickHouse 18.16: the decisions columns, the review queue and the
// shadow diff tables exist, v_decisions shows the new columns, and a re-run after an interruption passes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { MIGRATIONS, migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { decisionRow } from '../../../src/adapters/clickhouse/rows.js';
import { services, uniqueIdent } from '../setup/helpers.js';

describe('migration 8: rollout, shadow diffs, review queue', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_rollout_mig') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  it('a decision keeps its blueprint version and rollout arm, visible through v_decisions', async () => {
    const row = decisionRow({ trace_id: 't1', agent_id: 'a1', intervention: 'ok', event_time_ms: 1_700_000_000_000, blueprint_version: '1.1.0', rollout_arm: 'canary' }, 1);
    await store.insert('decisions', [row]);
    const got = await store.query<{ blueprint_version: string; rollout_arm: string }>(`SELECT blueprint_version, rollout_arm FROM ${store.table('v_decisions')}`);
    expect(got).toEqual([{ blueprint_version: '1.1.0', rollout_arm: 'canary' }]);
    const cols = await store.query<{ name: string }>(`SELECT name FROM system.columns WHERE database = '${store.database}' AND table = 'review_queue'`);
    expect(cols.map((c) => c.name)).toContain('sla_due_ms');
  });

  it('re-running migration 8 after it was applied but not recorded passes (ADD COLUMN already done)', async () => {
    const m8 = MIGRATIONS.find((m) => m.version === 8)!;
    const fresh = new ClickHouseStore({ url: services().clickhouseUrl, database: store.database });
    try {
      await store.command(`ALTER TABLE ${store.table('schema_migrations')} DELETE WHERE version = 8`);
      // ALTER DELETE is asynchronous on 18.16: wait for the mutation instead of for time.
      for (let i = 0; i < 200; i++) {
        const left = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('schema_migrations')} FINAL WHERE version = 8`);
        if (Number(left[0].n) === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const res = await migrate(fresh, { migrations: [m8] });
      expect(res.applied).toEqual([8]);
    } finally {
      await fresh.close();
    }
  });
});
