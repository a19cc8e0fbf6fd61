// Acceptance: every decision and verdict produced to Kafka lands exactly once in query results, with
// redelivered duplicates (re-produced copies and a full re-read by a second consumer group); bad records
// go to the DLQ; decisions become a valid hash-chained ledger.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readLedger } from '../../../src/adapters/clickhouse/ledger-store.js';
import { verifyLedger } from '../../../src/engine/ledger/index.js';
import { run as ledgerCli } from '../../../src/cli/commands/ledger.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { caughtUp, decisionMsg, publicPem, setupEnv, signer, verdictMsg, type Env } from './fixtures.js';
import { consumeMessages, waitFor } from '../setup/helpers.js';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const N_DEC = 240;
const N_VER = 180;

describe('sink stage: Kafka → ClickHouse exactly once (real Kafka + ClickHouse)', () => {
  let env: Env;
  let keyDir: string;
  beforeAll(async () => {
    env = await setupEnv('sink');
    keyDir = mkdtempSync(join(tmpdir(), 'steward-ledger-keys-'));
    writeFileSync(join(keyDir, 'ledger.pem'), publicPem);
  });
  afterAll(async () => {
    await env?.close();
    if (keyDir) rmSync(keyDir, { recursive: true, force: true });
  });

  it('lands every decision and verdict once, dead-letters bad records, chains the ledger', async () => {
    const decisions = Array.from({ length: N_DEC }, (_, i) => decisionMsg(i));
    const verdicts = Array.from({ length: N_VER }, (_, i) => verdictMsg(i));
    await env.produce(env.topics.decisions, decisions.slice(0, 120));
    await env.produce(env.topics.verdicts, verdicts.slice(0, 90));
    const metrics = new StewardMetrics();
    const sink = await env.startSink({ metrics });
    await env.produce(env.topics.decisions, decisions.slice(120));
    await env.produce(env.topics.verdicts, verdicts.slice(90));
    // Redelivery by an upstream stage that crashed before committing: the same records again.
    await env.produce(env.topics.decisions, decisions.slice(100, 160));
    await env.produce(env.topics.verdicts, verdicts.slice(0, 50));
    await env.produce(env.topics.decisions, [{ key: 'agent-x', value: '{not json' }]);
    await env.produce(env.topics.verdicts, [{ key: 'agent-x', value: JSON.stringify({ agent_id: 'agent-x', intervention: 'ok' }) }]);
    await env.produce(env.topics.trustDebt, [
      { event_id: 'ev-1', agent_id: 'agent-1', tenant: 'acme', at_ms: 1_700_000_000_000, cause: 'block', before: 0.4, after: 0.55, level: 'restricted_mode', previous_level: 'elevated_monitoring', crossings: [{ threshold: 'restricted_mode', direction: 'up' }], duplicate: false },
      // Redis replays the original change for an event id it had applied (the stage crashed before publishing).
      { event_id: 'ev-1', agent_id: 'agent-1', tenant: 'acme', at_ms: 1_700_000_000_000, cause: 'block', before: 0.4, after: 0.55, level: 'restricted_mode', previous_level: 'elevated_monitoring', crossings: [{ threshold: 'restricted_mode', direction: 'up' }], duplicate: true },
      // Only the replay reached Kafka for ev-2: it must still be recorded.
      { event_id: 'ev-2', agent_id: 'agent-1', tenant: 'acme', at_ms: 1_700_000_060_000, cause: 'flag', before: 0.55, after: 0.6, level: 'restricted_mode', previous_level: 'restricted_mode', crossings: [], duplicate: true },
    ]);

    // A finalization-gate outcome and an ACM draft from another stage.
    await env.produce(env.topics.gate, [{ trace_id: 'final-1', agent_id: 'agent-2', tenant: 'acme', intervention: 'block', approved: false, event_time_ms: 1_700_000_500_000, judge: { aligned: false } }]);
    await env.produce(env.topics.ledger, [{ entry_id: 'plan:g1:A', agent_id: 'agent-7', tenant: 'acme', ts_ms: 1_700_000_900_000, type: 'PLAN_SELECTED', payload: { plan: 'A', over: ['B'], selector: 'policy' } }]);

    await waitFor(async () => (await env.count('v_decisions')).n >= N_DEC && (await env.count('v_verdicts')).n >= N_VER, { timeoutMs: 45_000, message: 'rows in ClickHouse' });
    await waitFor(() => caughtUp(`${env.prefix}-sink`, [env.topics.decisions, env.topics.verdicts, env.topics.ledger]), { timeoutMs: 30_000, message: 'offsets committed' });

    expect(await env.count('v_decisions')).toEqual({ n: N_DEC, u: N_DEC });
    expect(await env.count('v_verdicts')).toEqual({ n: N_VER, u: N_VER });
    const blocked = await env.store.query<{ n: string }>(`SELECT count() AS n FROM ${env.store.table('v_decisions')} WHERE intervention = 'block'`);
    expect(Number(blocked[0].n)).toBe(decisions.filter((d) => d.intervention === 'block').length);
    const td = await env.store.query<{ event_id: string; n: string; before: number; after: number }>(
      `SELECT event_id, count() AS n, any(before) AS before, any(after) AS after FROM ${env.store.table('v_trust_debt_events')} GROUP BY event_id ORDER BY event_id`,
    );
    expect(td).toMatchObject([
      { event_id: 'ev-1', n: '1', before: 0.4, after: 0.55 },
      { event_id: 'ev-2', n: '1', before: 0.55, after: 0.6 },
    ]);

    // The two unmappable records are in the DLQ with the reason, and their metadata in dlq_events.
    const dlq = await consumeMessages(env.topics.dlq, 2, { timeoutMs: 20_000 });
    expect(dlq.map((m) => m.headers?.['x-steward-error-code']?.toString()).sort()).toEqual(['STEWARD_SINK_RECORD', 'STEWARD_SINK_RECORD']);
    await waitFor(async () => (await env.store.query<{ n: string }>(`SELECT count() AS n FROM ${env.store.table('v_dlq_events')}`))[0].n === '2', { timeoutMs: 20_000, message: 'dlq_events' });

    // One POLICY_DECISION per decision (duplicates did not append again), every chain intact.
    const entries = await readLedger(env.store);
    const r = verifyLedger(entries, { [signer.kid]: publicPem });
    expect(r.issues).toEqual([]);
    expect(r.entries).toBe(N_DEC + 1);
    expect(r.agents).toBe(8);
    expect(new Set(entries.map((e) => e.entry_id)).size).toBe(N_DEC + 1);
    // The writer indexed every entry's id (written off the critical path, shortly after the entries).
    const ids = async () => Number((await env.store.query<{ n: string }>(`SELECT count() AS n FROM ${env.store.table('ledger_ids')} FINAL`))[0].n);
    await waitFor(async () => (await ids()) === N_DEC + 1, { timeoutMs: 10_000, message: 'ledger ids indexed' });
    expect(entries.find((e) => e.entry_id === 'plan:g1:A')).toMatchObject({ agent_id: 'agent-7', type: 'PLAN_SELECTED', payload: { plan: 'A' } });
    expect(await env.count('v_gate_events')).toEqual({ n: 1, u: 1 });
    // /metrics: rows per table (the 60 redelivered decisions and 50 verdicts were inserted again; the tables
    // dedupe), the two dead letters, nothing buffered, no lag.
    const text = await metrics.registry.metrics();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(value('steward_sink_rows_total{table="decisions"}')).toBeGreaterThanOrEqual(N_DEC + 60);
    expect(value('steward_sink_rows_total{table="verdicts"}')).toBeGreaterThanOrEqual(N_VER + 50);
    expect(value('steward_sink_rows_total{table="ledger"}')).toBeGreaterThanOrEqual(N_DEC + 1);
    expect(value('steward_dlq_total{stage="sink",code="STEWARD_SINK_RECORD"}')).toBe(2);
    expect(value('steward_sink_buffered_rows')).toBe(0);
    expect(value('steward_sink_insert_seconds_count{table="decisions"}')).toBeGreaterThan(0);
    expect(value(`steward_consumer_lag{stage="sink",topic="${env.topics.decisions}",partition="0"}`)).toBe(0);
    await sink.stop();

    // A second consumer group re-reads every topic from the beginning: a full redelivery.
    const group2 = `${env.prefix}-sink-replay`;
    const again = await env.startSink({ groupId: group2 });
    await waitFor(() => caughtUp(group2, [env.topics.decisions, env.topics.verdicts, env.topics.ledger]), { timeoutMs: 45_000, message: 'replay consumed' });
    // The replay dead-letters the two bad records again; they are the same failures, counted once.
    await consumeMessages(env.topics.dlq, 4, { timeoutMs: 20_000 });
    await waitFor(() => caughtUp(group2, [env.topics.dlq]), { timeoutMs: 30_000, message: 'replayed DLQ consumed' });
    expect((await env.store.query<{ n: string }>(`SELECT count() AS n FROM ${env.store.table('v_dlq_events')}`))[0].n).toBe('2');
    expect(await env.count('v_decisions')).toEqual({ n: N_DEC, u: N_DEC });
    expect(await env.count('v_verdicts')).toEqual({ n: N_VER, u: N_VER });
    const after = verifyLedger(await readLedger(env.store), { [signer.kid]: publicPem });
    expect(after).toMatchObject({ ok: true, entries: N_DEC + 1 });
    await again.stop();
  });

  it('steward ledger verify: exit 0 when intact, 1 naming the entry for edit, delete, insert and re-sign', async () => {
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
    const cli = async (...extra: string[]) => {
      out.length = 0;
      const code = await ledgerCli(['verify', '--url', env.store.settings.url, '--database', env.database, '--keys', keyDir, ...extra]);
      return { code, text: out.join('') };
    };
    const mutate = async (sql: string) => {
      await env.store.command(sql);
      await waitFor(async () => (await env.store.query<{ n: string }>(`SELECT count() AS n FROM system.mutations WHERE database = '${env.database}' AND is_done = 0`))[0].n === '0', { message: 'mutation' });
    };
    try {
      expect((await cli()).code).toBe(0);
      const anchorsFile = join(keyDir, 'anchors.json');
      expect((await cli('--write-anchors', anchorsFile)).code).toBe(0);
      expect(Object.keys(JSON.parse(readFileSync(anchorsFile, 'utf8'))).length).toBeGreaterThan(7);
      expect((await cli('--agent', 'agent-3')).text).toMatch(/30 entries, 1 agent\(s\), 0 problem/);

      await mutate(`ALTER TABLE ${env.store.table('ledger')} UPDATE payload = '{"decision":"allow"}' WHERE agent_id = 'agent-1' AND seq = 4`);
      let r = await cli('--agent', 'agent-1');
      expect(r.code).toBe(1);
      expect(r.text).toMatch(/agent agent-1 seq 4 entry pd:trace-\d+: edited/);

      await mutate(`ALTER TABLE ${env.store.table('ledger')} DELETE WHERE agent_id = 'agent-2' AND seq = 7`);
      r = await cli('--agent', 'agent-2');
      expect(r.code).toBe(1);
      expect(r.text).toMatch(/agent agent-2 seq 8 .*: deleted: entry seq 7 missing/);

      // Insert: a forged entry for an existing seq, signed with the attacker's key.
      const [e5] = (await readLedger(env.store, 'agent-5')).filter((e) => e.seq === 5);
      const { ed25519Signer, entryHash } = await import('../../../src/engine/ledger/index.js');
      const { generateKeyPairSync } = await import('node:crypto');
      const evil = ed25519Signer(generateKeyPairSync('ed25519').privateKey);
      const forged = { ...e5, entry_id: 'pd:forged', payload: { decision: 'allow' }, kid: evil.kid };
      const fh = entryHash(forged);
      await env.store.insert('ledger', [{ ...forged, payload: JSON.stringify(forged.payload), hash: fh, signature: evil.sign(fh), ingested_at_ms: 1 }]);
      r = await cli('--agent', 'agent-5');
      expect(r.code).toBe(1);
      expect(r.text).toMatch(/agent agent-5 seq 5 entry pd:forged: inserted/);

      // Re-sign: entry 2 of agent-6 edited, re-hashed and re-signed with another key (kid kept).
      const [e2] = (await readLedger(env.store, 'agent-6')).filter((e) => e.seq === 2);
      const edited = { ...e2, payload: { ...e2.payload, decision: 'allow', intervention: 'ok' } };
      const eh = entryHash(edited);
      const { default: canonicalize } = (await import('canonicalize')) as unknown as { default: (v: unknown) => string };
      await mutate(
        `ALTER TABLE ${env.store.table('ledger')} UPDATE payload = '${canonicalize(edited.payload).replace(/'/g, "\\'")}', hash = '${eh}', signature = '${evil.sign(eh)}' WHERE agent_id = 'agent-6' AND seq = 2`,
      );
      r = await cli('--agent', 'agent-6');
      expect(r.code).toBe(1);
      expect(r.text).toMatch(/agent agent-6 seq 2 .*: bad_signature/);

      const all = await cli();
      expect(all.code).toBe(1);
      expect(all.text).toMatch(/4 problem\(s\)|[45] problem\(s\)/);
      expect((await cli('--agent', 'agent-0')).code).toBe(0);

      // Truncation: the newest entries of agent-7 dropped. The chain that is left is self-consistent, so
      // only the anchors saved while it was intact reveal it.
      const anchored = JSON.parse(readFileSync(anchorsFile, 'utf8')) as Record<string, { seq: number }>;
      const last7 = anchored['agent-7']!.seq;
      await mutate(`ALTER TABLE ${env.store.table('ledger')} DELETE WHERE agent_id = 'agent-7' AND seq >= ${last7 - 1}`);
      expect((await cli('--agent', 'agent-7')).code).toBe(0);
      r = await cli('--agent', 'agent-7', '--anchors', anchorsFile);
      expect(r.code).toBe(1);
      expect(r.text).toContain(`agent agent-7 seq ${last7} entry -: truncated: chain ends at seq ${last7 - 2}, anchor says ${last7}`);
      expect((await cli('--agent', 'agent-0', '--anchors', anchorsFile)).code).toBe(0);
      await mutate(`ALTER TABLE ${env.store.table('ledger')} DELETE WHERE agent_id = 'agent-4'`);
      r = await cli('--anchors', anchorsFile);
      expect(r.code).toBe(1);
      expect(r.text).toContain(`agent agent-4 seq ${anchored['agent-4']!.seq} entry -: truncated: no entries, anchor says seq ${anchored['agent-4']!.seq}`);
      // A whole chain gone: naming the agent is not "intact".
      expect((await cli('--agent', 'agent-4')).code).toBe(1);

      // A duplicate key in the stored payload: JSON.parse keeps the last ("deny", what was hashed), ClickHouse's
      // JSON functions read the first ("allow"). The stored text is no longer canonical: edited.
      await mutate(`ALTER TABLE ${env.store.table('ledger')} UPDATE payload = replaceOne(payload, '{', '{"decision":"allow",') WHERE agent_id = 'agent-0' AND seq = 3`);
      r = await cli('--agent', 'agent-0');
      expect(r.code).toBe(1);
      expect(r.text).toMatch(/agent agent-0 seq 3 entry pd:trace-\d+: edited/);

      // A forged second copy of an entry (same seq, hash, signature and entry_id, another payload) is not a redelivery.
      const [e3] = (await readLedger(env.store, 'agent-3')).filter((e) => e.seq === 3);
      const copy = { ...e3, payload: canonicalize({ ...e3.payload, decision: e3.payload.decision === 'allow' ? 'deny' : 'allow' }), ingested_at_ms: 2 };
      await env.store.insert('ledger', [copy]);
      r = await cli('--agent', 'agent-3');
      expect(r.code).toBe(1);
      expect(r.text).toMatch(/agent agent-3 seq 3 entry pd:trace-\d+: (inserted|edited)/);
    } finally {
      spy.mockRestore();
    }
  });
});
