// The sink's run-record join across a restart on the real server (contracts C12): a half stored alone in
// acm_run_records (kind pending or answer) is read back by a new joiner (stagedRunParts) and completes its event
// when the other half arrives — either order; halves of other events, runs or tenants are not taken.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { stagedRunParts } from '../../../src/adapters/clickhouse/replay-source.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { RunRecordJoin, runRecordPart, type RunRecordPart } from '../../../src/consumers/run-record-join.js';
import type { PendingRunEvent, RunEventAnswer } from '../../../src/engine/acm/index.js';
import { services, uniqueIdent } from '../setup/helpers.js';

function halves(tenant: string, run: string, n: number): { p: PendingRunEvent; a: RunEventAnswer } {
  const trace = { trace_id: `t${n}`, agent_id: 'a1', timestamp: '2026-01-01T00:00:00Z', hook: 'branch', run: { runId: run } };
  const ids = { tenant, run_id: run, agent_id: 'a1', trace_id: `t${n}`, event_id: `t${n}#e` };
  return {
    p: { run_record: 'pending', ...ids, seq: n, now_ms: 1767225600000 + n, line: JSON.stringify(trace), request: { seq: n, trace_id: `t${n}`, event_id: ids.event_id, hook: 'branch', trace_line: n, trace_digest: 'd', now_ms: 1767225600000 + n, blueprint: { id: 'b', version: '1' }, reads: [], trust_debt: { debt: 0, level: 'normal' } }, checks: { blueprint: 'b', reasons: [], tripwires: [], rules: [] }, contexts: [], drafts: [] },
    a: { run_record: 'answer', ...ids, blueprint: 'b', intervention: 'ok', stage: 'rule', ctq: null, risk: null, metrics: [], verdict: { trace_id: `t${n}` } },
  };
}

const msg = (part: RunRecordPart) => ({ part, source: { topic: 'acgp.ledger', partition: 0, offset: '0', key: null, value: null, headers: {}, timestampMs: 0 } as unknown as InMessage });

describe('run-record join over staged rows (real ClickHouse)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_run_join') });
    await migrate(store);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });
  const joiner = () => new RunRecordJoin(async (keys) => (await stagedRunParts(store, keys)).flatMap((v) => runRecordPart(v) ?? []), { nowMs: () => Date.now() });

  it('a pending record stored alone joins its answer in a new joiner; an answer stored alone joins its pending record', async () => {
    const e1 = halves('acme', 'run-1', 1);
    const e2 = halves('acme', 'run-1', 2);
    // Decoys: the same event id under another run and another tenant.
    const other = [halves('acme', 'run-2', 1).p, halves('beta', 'run-1', 1).p];
    for (const part of [e1.p, e2.a, ...other]) {
      const out = await joiner().join([msg(part)]);
      expect(out.joined).toEqual([]);
      await store.insert('acm_run_records', out.staged.map((s) => s.row));
    }
    const first = await joiner().join([msg(e1.a)]);
    expect(first.joined.map((j) => [j.pending.tenant, j.pending.run_id, j.pending.seq])).toEqual([['acme', 'run-1', 1]]);
    expect(first.staged).toEqual([]);
    const second = await joiner().join([msg(e2.p)]);
    expect(second.joined.map((j) => j.completed.response.verdict)).toEqual([{ trace_id: 't2' }]);
    // An event no half of which is stored: staged, not joined with a decoy.
    const lone = await joiner().join([msg(halves('acme', 'run-1', 3).a)]);
    expect(lone.joined).toEqual([]);
    expect(lone.staged.map((s) => s.row.kind)).toEqual(['answer']);
  });
});
