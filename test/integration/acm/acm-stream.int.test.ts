// ACM run governance in the stream (docs/acm.md "In the stream") on real Kafka, Redis and ClickHouse: the refund
// example run (examples/refund-run, plan-A/plan-B) played through a StewardClient into the tripwire stage and
// the sink. Every answer equals what `steward eval --bundles` answers offline for the same events (the forbidden
// branch is block); a malformed plan is dead-lettered with its problems as the reason and the waiting client gets
// the fail-closed rejection; the run's ACM ledger entries land in ClickHouse with exactly one POLICY_DECISION
// per decided event (the one carrying the run), keyed by event id; the run's own chain (acm_ledger: the sink's join
// of the tripwire stage's pending records and the scorer's answers) from genesis, intact; a redelivered trace adds
// no entry and a reused trace id with other bytes adds its own.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runEval } from '../../../src/cli/commands/eval.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { runReport } from '../../../src/adapters/clickhouse/reports.js';
import { StewardClient } from '../../../src/client/steward-client.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ledgerSignerFrom } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { ledgerEntryFromRow } from '../../../src/adapters/clickhouse/rows.js';
import { GENESIS_HASH, verifyLedger } from '../../../src/engine/ledger/index.js';
import type { Trace } from '../../../src/engine/types.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';

const BLUEPRINTS = 'examples/refund-run/blueprints';
const LEDGER_SELECT = 'entry_id, agent_id, tenant, seq, ts_ms, type, payload, prev_hash, hash, signature, kid';
const example = readFileSync('examples/refund-run/trace.jsonl', 'utf8').split('\n').filter((l) => l.trim());
// A malformed plan (an edge to a missing task, a cycle) of its own run, among the example's events.
const badPlan = JSON.stringify({
  trace_id: 'bad-plan-1',
  agent_id: 'refund-agent-1',
  timestamp: '2025-10-03T10:30:00Z',
  hook: 'plan',
  run: { engine: 'langgraph', runId: 'run-bad-plan' },
  goal: { id: 'BAD' },
  selection: { method: 'llm', chosenPlanId: 'p' },
  plans: [{ id: 'p', contextRef: 'ctx-2025-10-03-001', tasks: [{ id: 't1' }, { id: 't2' }], edges: [{ from: 't1', to: 't2' }, { from: 't2', to: 't1' }, { from: 't2', to: 'nowhere' }] }],
});
const lines = [...example.slice(0, 9), badPlan, ...example.slice(9)];

async function offline(): Promise<Map<string, { intervention?: string; error?: string }>> {
  const dir = mkdtempSync(join(tmpdir(), 'acm-stream-eval-'));
  const out: Record<string, any>[] = [];
  try {
    await runEval({ blueprints: BLUEPRINTS, input: '-', bundles: dir }, { input: Readable.from([lines.join('\n') + '\n']), out: (l) => void out.push(JSON.parse(l)), err: () => undefined, stderrIsTty: false, llm: null });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return new Map(out.map((o, i) => [(JSON.parse(lines[i]!) as Trace).trace_id, o.error ? { error: String(o.error.code) } : { intervention: String(o.intervention) }]));
}

describe('ACM run governance in the stream (real Kafka, Redis, ClickHouse)', () => {
  it('the refund example run answers as eval --bundles does, blocks the forbidden branch, dead-letters the malformed plan, and lands its ledger', async () => {
    const expected = await offline();
    expect([...expected.values()].some((e) => e.intervention === 'block')).toBe(true);
    expect(expected.get('bad-plan-1')?.error).toMatch(/^STEWARD_ACM_/);
    const redisPrefix = uniqueRedisPrefix('acm');
    await withClickHouseDatabase(async (db) => {
      await withPipelineEnv('pl-acm', async ({ cfg: base, topics, adapter }) => {
        const cfg = pipelineConfig(base.topics.prefix, {
          blueprints: { dir: BLUEPRINTS, watch: false },
          redis: { key_prefix: redisPrefix },
          clickhouse: { database: db.name },
          consumer: { group_prefix: base.consumer.groupPrefix },
          trust_debt: { audit_sweep_interval_ms: 0 },
        });
        const logger = quietLogger();
        const keyPair = generateKeyPairSync('ed25519');
        const signer = ledgerSignerFrom(keyPair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
        const publicPem = keyPair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
        const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer'], logger);
        const pipe = await startPipeline(cfg, ['tripwire', 'scorer', 'sink'], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, signer) }, { logger });
        const out = await new Collector(adapter, [topics.dlq]).start();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const redis = redisClient();
        try {
          const got = new Map<string, { intervention?: string; error?: string }>();
          for (const l of lines) {
            const t = JSON.parse(l) as Trace;
            const d = await client.decide(t, { timeoutMs: 20_000 });
            expect(d.fallback).toBeUndefined();
            got.set(t.trace_id, d.rejected ? { error: d.rejected.code } : { intervention: d.intervention });
          }
          expect(got).toEqual(expected);

          // The malformed plan: dead-lettered with every problem as the reason.
          await waitFor(() => out.on(topics.dlq).length === 1, { timeoutMs: 20_000, message: 'malformed plan dead-lettered' });
          const dl = out.on(topics.dlq)[0]!;
          const reason = dl.headers['x-steward-error-message']?.toString() ?? '';
          expect(dl.headers['x-steward-error-code']?.toString()).toMatch(/^STEWARD_ACM_/);
          expect(reason).toContain('STEWARD_ACM_PLAN_CYCLE');
          expect(reason).toContain('STEWARD_ACM_EDGE_TASK');

          // ClickHouse: the run's entries, one POLICY_DECISION per decided event (carrying the run), in event order.
          const runId = 'run-2025-10-03-REFUND-001';
          const decided = lines.map((l) => JSON.parse(l) as Trace).filter((t) => (t.run as { runId?: string } | undefined)?.runId === runId);
          const q = async () =>
            (await (await db.client.query({ query: `SELECT type, entry_id, payload FROM ledger WHERE agent_id = 'refund-agent-1' ORDER BY seq`, format: 'JSONEachRow' })).json<{ type: string; entry_id: string; payload: string }>()).map((r) => ({ ...r, payload: JSON.parse(r.payload) as Record<string, unknown> }));
          await waitFor(async () => (await q()).filter((r) => r.payload.run_id === runId && r.type === 'POLICY_DECISION').length === decided.length, { timeoutMs: 30_000, message: 'POLICY_DECISIONs of the run in ClickHouse' });
          await new Promise((r) => setTimeout(r, 1500)); // a second POLICY_DECISION per event would have landed by now
          const rows = await q();
          const pd = rows.filter((r) => r.type === 'POLICY_DECISION');
          expect(new Set(pd.map((r) => r.entry_id)).size).toBe(pd.length);
          // Keyed by event id: the trace id and a digest of the record's bytes (spec-decisions D30).
          const pdIds = pd.filter((r) => r.payload.run_id === runId).map((r) => r.entry_id);
          expect(pdIds.map((id) => id.slice(0, id.indexOf('#')))).toEqual(decided.map((t) => `pd:${t.trace_id}`));
          expect(pdIds.every((id) => /#[0-9a-f]{32}$/.test(id))).toBe(true);
          const types = new Set(rows.filter((r) => r.payload.run_id === runId).map((r) => r.type));
          for (const t of ['PLAN_SELECTED', 'BRANCH_TAKEN', 'GOAL_AMENDED', 'COMPENSATION_APPLIED']) expect(types).toContain(t);
          expect(rows.some((r) => r.type === 'BRANCH_TAKEN' && r.payload.allowed === false)).toBe(true);
          // The malformed plan changed nothing: no entry and no state of its run.
          expect(rows.some((r) => r.payload.run_id === 'run-bad-plan')).toBe(false);
          expect(await redis.exists(`${redisPrefix}acm:{acme:run-bad-plan}:run`)).toBe(0);

          // The run's own chains (acm_ledger, spec-decisions D30): one per run and agent, from genesis, holding
          // exactly the run's entries of the agent chain, intact under the sink's key.
          const runChain = async () =>
            (await (await db.client.query({ query: `SELECT ${LEDGER_SELECT} FROM acm_ledger WHERE run_id = '${runId}' ORDER BY agent_id, seq`, format: 'JSONEachRow' })).json<Record<string, unknown>>()).map(ledgerEntryFromRow);
          await waitFor(async () => (await runChain()).length === rows.filter((r) => r.payload.run_id === runId).length, { timeoutMs: 30_000, message: 'the run chain in acm_ledger' });
          const chain = await runChain();
          for (const agent of new Set(chain.map((e) => e.agent_id))) {
            const entries = chain.filter((e) => e.agent_id === agent);
            expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
            expect(entries[0]!.prev_hash).toBe(GENESIS_HASH);
          }
          expect(new Set(chain.map((e) => e.entry_id))).toEqual(new Set(rows.filter((r) => r.payload.run_id === runId).map((r) => r.entry_id)));
          expect(verifyLedger(chain, { [signer.kid]: publicPem }).issues).toEqual([]);

          // #22 item 5: the same trace bytes again (a redelivery) add nothing to either chain; the same trace id
          // with other bytes is another event, with its own POLICY_DECISION in both.
          const last = JSON.parse(lines[lines.length - 1]!) as Trace;
          expect((await client.decide(last, { timeoutMs: 20_000 })).fallback).toBeUndefined();
          const reused = { ...last, timestamp: '2025-10-03T11:59:59Z' } as Trace;
          expect((await client.decide(reused, { timeoutMs: 20_000 })).fallback).toBeUndefined();
          const countOf = async (table: string) =>
            Number((await (await db.client.query({ query: `SELECT count() AS n FROM ${table} WHERE entry_id LIKE 'pd:${last.trace_id}#%'`, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n);
          await waitFor(async () => (await countOf('acm_ledger')) === 2 && (await countOf('ledger')) === 2, { timeoutMs: 30_000, message: 'the reused trace id recorded as a second event' });
          await new Promise((r) => setTimeout(r, 1500)); // a copy of the redelivered event would have landed by now
          expect(await countOf('acm_ledger')).toBe(2);
          expect(await countOf('ledger')).toBe(2);

          // The analyst views and `steward report runs` (docs/analytics.md "ACM runs") agree with the ledger rows.
          const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
          try {
            const mine = rows.filter((r) => r.payload.run_id === runId);
            const branchRows = mine.filter((r) => r.type === 'BRANCH_TAKEN');
            const [run] = await store.query<Record<string, string | number>>(`SELECT * FROM ${db.name}.v_acm_runs WHERE run_id = '${runId}'`);
            expect(run).toMatchObject({ tenant: 'acme', agent_id: 'refund-agent-1', plan_id: 'plan-A' });
            expect(Number(run!.decisions)).toBe(decided.length);
            expect(Number(run!.branches)).toBe(branchRows.length);
            expect(Number(run!.forbidden_branches)).toBe(branchRows.filter((r) => r.payload.allowed === false).length);
            expect(Number(run!.blocked)).toBe(mine.filter((r) => r.type === 'POLICY_DECISION' && ['block', 'halt'].includes(String(r.payload.intervention))).length);
            const branches = await store.query<{ from_task: string; to_task: string; allowed: number | string }>(`SELECT from_task, to_task, allowed FROM ${db.name}.v_acm_branches WHERE run_id = '${runId}' ORDER BY ts_ms`);
            expect(branches.map((b) => [b.from_task, b.to_task, Number(b.allowed) === 1])).toEqual(branchRows.map((r) => [r.payload.from, r.payload.to, r.payload.allowed]));
            const plans = await store.query<{ run_id: string; plan_id: string }>(`SELECT run_id, plan_id FROM ${db.name}.v_acm_plans ORDER BY ts_ms`);
            expect(plans.filter((p) => p.run_id === runId).map((p) => p.plan_id)).toEqual(['plan-A']);
            const pdps = await store.query<{ trace_id: string }>(`SELECT trace_id FROM ${db.name}.v_acm_policy_decisions WHERE run_id = '${runId}' ORDER BY ts_ms`);
            expect(pdps.map((p) => p.trace_id)).toEqual(decided.map((t) => t.trace_id));
            const report = await runReport(store, 'runs');
            expect(report.map((r) => r.run_id)).toContain(runId);
            expect(report.find((r) => r.run_id === runId)).toMatchObject({ plan_id: 'plan-A' });
          } finally {
            await store.close();
          }
        } finally {
          await client.close();
          await out.stop();
          await pipe.stop();
          await rt.close();
          await deleteRedisPrefix(redis, redisPrefix);
          await redis.quit();
        }
      });
    });
  }, 180_000);
});
