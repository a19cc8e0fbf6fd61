// The finalization gate as a stage of the pipeline, on real Kafka, Redis and ClickHouse, with a local judge
// speaking the OpenAI protocol: an agent's job goes FAIL → replan → PASS through client.finalize(); its tool
// calls are gated and recorded by the tripwire stage (an out-of-order workflow step is blocked before it runs);
// the gate instance is killed (SIGKILL) while it waits for the judge, and its successor answers the same
// attempt, counted once; the events, the REPLAN_TRIGGERED ledger entry and trust debt land where they should.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { StewardClient } from '../../../src/client/steward-client.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ledgerSignerFor } from '../../../src/process/steward-process.js';
import type { Trace } from '../../../src/engine/types.js';
import { startLlmServer } from '../../support/llm-server.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';

const CHILD = fileURLToPath(new URL('./gate-child.ts', import.meta.url));

const BLUEPRINT = `id: code/gated@1.0
version: "1.0.0"
description: coding agent with a finalization gate
scope: { agent_tier: [ACL-2] }
finalization_gate:
  enabled: true
  max_retries: 2
  strictness: medium
guardrails:
  - id: read_before_test
    tier: 2
    workflow: { steps: [read_file, run_tests], required: true }
    when: { intent_id: CHANGE_IMPLEMENTATION }
`;
const AGENTS = `agents:
  - { id: coder-g, tenant: acme, tier: ACL-2, tools: [read_file, run_tests, edit_file] }
`;
const judge = (score: number, verdict: string, codes: string[] = [], fix = 'REWRITE_ONLY', missing: string[] = []) =>
  JSON.stringify({ quality_score: score, verdict, reason_codes: codes, fix_mode: fix, missing_requirements: missing });

function startGateChild(raw: Record<string, unknown>): { proc: ChildProcess; ready: Promise<void> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify({ raw })], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => d.toString().includes('READY') && resolve());
    proc.once('exit', (code) => reject(new Error(`gate child exited early (${code})`)));
  });
  ready.catch(() => undefined);
  return { proc, ready };
}
const exited = (p: ChildProcess) => new Promise<void>((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', () => r())));

describe('gate stage (real Kafka, Redis, ClickHouse; local OpenAI-protocol judge)', () => {
  it('a job goes FAIL → replan → PASS, survives a killed gate instance, and lands its events, ledger entry and debt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-gate-'));
    writeFileSync(join(dir, 'gated.yaml'), BLUEPRINT);
    writeFileSync(join(dir, 'agents.yaml'), AGENTS);
    const llm = await startLlmServer({ kind: 'content', content: judge(0.9, 'PASS') });
    const redisPrefix = uniqueRedisPrefix('gate');
    await withClickHouseDatabase(async (db) => {
      await withPipelineEnv('pl-gate', async ({ cfg: base, topics, adapter }) => {
        const raw = {
          topics: { prefix: base.topics.prefix, partitions: 3, reply_partitions: 4 },
          consumer: { group_prefix: base.consumer.groupPrefix, session_timeout_ms: 6000, auto_commit_interval_ms: 200 },
          limits: { max_trace_bytes: 16384, chunk_size: 200, partitions_concurrently: 3, max_event_time_skew_ms: null },
          observability: { enabled: false },
          blueprints: { dir, watch: false },
          redis: { key_prefix: redisPrefix },
          clickhouse: { database: db.name },
          llm: { base_url: llm.url, model: 'judge-test', timeout_ms: 60_000 },
          trust_debt: { audit_sweep_interval_ms: 0 },
        };
        const cfg = pipelineConfig(base.topics.prefix, raw);
        const logger = quietLogger();
        const rt = await bootstrapEngine(cfg, ['tripwire', 'trust-debt'], logger);
        const pipe = await startPipeline(cfg, ['tripwire', 'trust-debt', 'sink'], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSignerFor(cfg, logger)) }, { logger });
        let child = startGateChild(raw);
        const out = await new Collector(adapter, [topics.decisions, topics.gate, topics.trustDebt, topics.dlq]).start();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const redis = redisClient();
        try {
          await child.ready;
          let n = 0;
          const t0 = Date.UTC(2026, 4, 1, 9);
          const at = () => new Date(t0 + ++n * 1000).toISOString();
          const tool = (name: string): Trace => ({ trace_id: `t-${n}-${name}`, agent_id: 'coder-g', timestamp: at(), hook: 'tool_call', tool: name, job_id: 'job-1', intent_id: 'CHANGE_IMPLEMENTATION', args: { path: 'src/app.ts' } });
          const answer = (draft: string, extra: Partial<Trace> = {}): Trace => ({
            trace_id: `fa-${n}`,
            agent_id: 'coder-g',
            timestamp: at(),
            hook: 'final_answer',
            job_id: 'job-1',
            session_id: 's-1',
            user_id: 'user-42',
            goal: 'Add input validation to the signup handler.',
            intent_id: 'CHANGE_IMPLEMENTATION',
            draft_answer: draft,
            ...extra,
          });

          // Tier 2 at tool_call time: run_tests before read_file is blocked before it runs, and is no evidence.
          const early = await client.decide(tool('run_tests'), { timeoutMs: 20_000 });
          expect(early.intervention).toBe('block');
          expect(early.rules.map((r) => r.id)).toContain('gate:workflow:read_before_test');
          expect((await client.decide(tool('read_file'), { timeoutMs: 20_000 })).intervention).toBe('ok');
          expect((await client.decide(tool('run_tests'), { timeoutMs: 20_000 })).intervention).toBe('ok');

          // Attempt 0: the judge fails the draft → replan with the §9.12 directive.
          llm.script({ kind: 'content', content: judge(0.4, 'FAIL', ['UNSUPPORTED_SPECIFICS'], 'REWRITE_ONLY', ['cite the validation code']), usage: { input: 1500, output: 40 } });
          const a0 = await client.finalize(answer('Validation added (see line 42).', { artifact_type: 'summary' }), { timeoutMs: 30_000 });
          expect(a0).toMatchObject({ verdict: 'FAIL', action: 'replan', fix_mode: 'NEEDS_NEW_EVIDENCE', attempt_index: 0, judged_by: 'llm', intervention: 'block', degraded: false });
          expect(a0.directive).toContain('You must repair the final answer');
          expect(a0.approved).toBe(false);
          // The same draft through decide(): refused at once, not the ACL-2 fallback's approved flag (D49).
          const asked = llm.requests.length;
          const viaDecide = await client.decide(answer('Validation added (see line 42).', { artifact_type: 'summary' }), { timeoutMs: 5_000 });
          expect(viaDecide).toMatchObject({ intervention: 'block', approved: false, rejected: { code: 'STEWARD_USAGE' } });
          expect(viaDecide.fallback).toBeUndefined();
          expect(llm.requests.length).toBe(asked);
          // Steward wrote the tool trace summary from the job's recorded calls (the blocked one is not evidence).
          const prompt0 = JSON.stringify(llm.requests.at(-1)!.body);
          expect(prompt0).toContain('read_file');
          expect(prompt0).toContain('Validation added (see line 42).');

          // New evidence, then attempt 1 — the gate instance is killed while the judge holds the answer.
          expect((await client.decide(tool('edit_file'), { timeoutMs: 20_000 })).intervention).toBe('ok');
          llm.script({ kind: 'hang' });
          const before = llm.requests.length;
          const pending = client.finalize(answer('Validation added in src/app.ts: email and password checks.', { artifact_type: 'diff' }), { timeoutMs: 90_000 });
          await waitFor(() => llm.requests.length > before, { timeoutMs: 30_000, message: 'judge asked for attempt 1' });
          child.proc.kill('SIGKILL');
          await exited(child.proc);
          child = startGateChild(raw);
          await child.ready;
          const a1 = await pending;
          expect(a1).toMatchObject({ verdict: 'PASS', action: 'finalize', attempt_index: 1, intervention: 'ok', directive: null, approved: true });
          expect(a1.fallback).toBeUndefined();

          client.publish({ trace_id: 'fb-1', agent_id: 'coder-g', timestamp: at(), hook: 'user_feedback', job_id: 'job-1', feedback: 'up' });

          // acgp.gate: one judge result per attempt (attempt 1 once, though judged twice), the outcome with the feedback.
          await waitFor(() => out.json(topics.gate).some((e) => e.event === 'finalization_outcome' && e.user_feedback === 'up'), { timeoutMs: 30_000, message: 'feedback outcome' });
          const judged = new Map(out.json(topics.gate).filter((e) => e.event === 'final_alignment_judge_result').map((e) => [e.event_id, e]));
          expect([...judged.values()].map((e) => [e.attempt_index, e.verdict, e.action]).sort()).toEqual([
            [0, 'FAIL', 'replan'],
            [1, 'PASS', 'finalize'],
          ]);
          const j0 = [...judged.values()].find((e) => e.attempt_index === 0)!;
          expect(j0).toMatchObject({ job_id: 'job-1', session_id: 's-1', intent_id: 'CHANGE_IMPLEMENTATION', model_id: 'judge-test', token_cost: 1540, trust_debt: { no_debt: true } });
          expect(j0.user_id_hash).toMatch(/^[0-9a-f]{64}$/);
          const outcome = out.json(topics.gate).find((e) => e.event === 'finalization_outcome')!;
          expect(outcome).toMatchObject({ final_verdict: 'pass', num_retries: 1, action: 'finalize' });

          // Trust debt: the repair loop moved nothing; the passing answer moved the agent once (ok: 0).
          await waitFor(() => out.json(topics.trustDebt).some((d) => d.trace_id === a1.trace_id), { timeoutMs: 30_000, message: 'debt event of the passing answer' });
          expect(out.json(topics.trustDebt).filter((d) => d.trace_id === a0.trace_id)).toHaveLength(0);
          expect(out.json(topics.trustDebt).find((d) => d.trace_id === a1.trace_id)).toMatchObject({ cause: 'intervention:ok', after: 0 });

          // ClickHouse: the signed ledger holds the REPLAN_TRIGGERED entry of the job; the gate events are stored.
          await waitFor(
            async () => {
              const r = await db.client.query({ query: `SELECT type, payload FROM ledger WHERE agent_id = 'coder-g' AND type = 'REPLAN_TRIGGERED'`, format: 'JSONEachRow' });
              return (await r.json<{ type: string; payload: string }>()).length === 1;
            },
            { timeoutMs: 30_000, message: 'REPLAN_TRIGGERED in ClickHouse' },
          );
          // The stage's own events, as the sink stored them: one judge result per attempt, the outcome with the
          // feedback, and the job in the panels' per-job view.
          const q = async <T>(sql: string) => (await db.client.query({ query: sql, format: 'JSONEachRow' })).json<T>();
          await waitFor(async () => (await q<{ user_feedback: string }>(`SELECT user_feedback FROM v_gate_outcomes WHERE agent_id = 'coder-g' AND job_id = 'job-1' AND user_feedback = 'up'`)).length === 1, {
            timeoutMs: 30_000,
            message: 'the outcome with its feedback in ClickHouse',
          });
          // The judge results may come in a later sink batch than the outcome (another partition of acgp.gate).
          const judgedSql = `SELECT attempt_index, verdict, action, fix_mode, reason_codes, judged_by, model_id, session_id, user_id_hash, token_cost FROM v_gate_judge_results WHERE agent_id = 'coder-g' AND job_id = 'job-1' ORDER BY attempt_index`;
          await waitFor(async () => (await q<Record<string, unknown>>(judgedSql)).length === 2, { timeoutMs: 30_000, message: 'both judge results in ClickHouse' });
          const judgedRows = await q<Record<string, unknown>>(judgedSql);
          expect(judgedRows).toHaveLength(2);
          expect(judgedRows[0]).toMatchObject({ attempt_index: 0, verdict: 'FAIL', action: 'replan', fix_mode: 'NEEDS_NEW_EVIDENCE', reason_codes: ['UNSUPPORTED_SPECIFICS'], judged_by: 'llm', model_id: 'judge-test', session_id: 's-1', user_id_hash: j0.user_id_hash, token_cost: 1540 });
          // The stand-in's default usage (1 in, 1 out): the tokens the providers report reach the row (spec-decisions D41).
          expect(judgedRows[1]).toMatchObject({ attempt_index: 1, verdict: 'PASS', action: 'finalize', judged_by: 'llm', token_cost: 2 });
          const jobs = await q<Record<string, unknown>>(`SELECT final_verdict, action, num_retries FROM v_gate_jobs WHERE agent_id = 'coder-g' AND job_id = 'job-1'`);
          expect(jobs).toEqual([{ final_verdict: 'pass', action: 'finalize', num_retries: 1 }]);
          expect(out.on(topics.dlq)).toHaveLength(0);
        } finally {
          child.proc.kill('SIGKILL');
          await exited(child.proc);
          await client.close();
          await out.stop();
          await pipe.stop();
          await rt.close();
          await deleteRedisPrefix(redis, redisPrefix);
          await redis.quit();
        }
      });
    });
    await llm.close();
  }, 240_000);
});

describe('client.finalize() without a gate answer (real Kafka, Redis)', () => {
  it('a final answer without job_id is refused fail-closed; with no gate stage running the governance fallback answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-gate-'));
    writeFileSync(join(dir, 'gated.yaml'), BLUEPRINT);
    writeFileSync(join(dir, 'agents.yaml'), AGENTS);
    const redisPrefix = uniqueRedisPrefix('gate-fb');
    await withPipelineEnv('pl-gate-fb', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, watch: false }, redis: { key_prefix: redisPrefix }, consumer: { group_prefix: base.consumer.groupPrefix }, trust_debt: { audit_sweep_interval_ms: 0 } });
      const logger = quietLogger();
      const rt = await bootstrapEngine(cfg, ['tripwire'], logger);
      const pipe = await startPipeline(cfg, ['tripwire'], rt.deps, { logger });
      const out = await new Collector(adapter, [topics.finalize, topics.dlq]).start();
      const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, fallbackOnTimeout: 'deny' });
      const redis = redisClient();
      try {
        const ts = new Date(Date.UTC(2026, 4, 2)).toISOString();
        const refused = await client.finalize({ trace_id: 'fa-nojob', agent_id: 'coder-g', timestamp: ts, hook: 'final_answer', draft_answer: 'done' }, { timeoutMs: 20_000 });
        expect(refused).toMatchObject({ trace_id: 'fa-nojob', intervention: 'block', approved: false, action: 'block', rejected: { code: 'STEWARD_GATE_INPUT' } });
        expect(refused.fallback).toBeUndefined();
        await waitFor(() => out.on(topics.dlq).length === 1, { timeoutMs: 20_000, message: 'dead-lettered final answer' });

        // Handed to acgp.finalize, but no gate stage answers: the contract's fallback (deny → block).
        const t0 = Date.now();
        const fb = await client.finalize({ trace_id: 'fa-slow', agent_id: 'coder-g', timestamp: ts, hook: 'final_answer', job_id: 'j-9', draft_answer: 'done' }, { timeoutMs: 3_000 });
        expect(Date.now() - t0).toBeGreaterThanOrEqual(2_900);
        expect(fb).toMatchObject({ trace_id: 'fa-slow', job_id: 'j-9', fallback: true, action: 'block', intervention: 'block', degraded: true });
        await waitFor(() => out.json(topics.finalize).some((m) => m.trace.trace_id === 'fa-slow' && typeof m.reply?.correlation_id === 'string'), { timeoutMs: 20_000, message: 'handed to the gate with the reply route' });
      } finally {
        await client.close();
        await out.stop();
        await pipe.stop();
        await rt.close();
        await deleteRedisPrefix(redis, redisPrefix);
        await redis.quit();
      }
    });
  }, 120_000);
});
