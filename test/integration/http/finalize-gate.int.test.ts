// POST /v1/finalize answered by the real finalization gate (docs/http.md "Routes", docs/gate.md), on real Kafka and
// Redis, with a local judge speaking the OpenAI protocol: an agent known only by its API key records a tool call
// through POST /v1/decide, its first final answer is judged FAIL and answered `replan` with the §9.12 directive, it
// gathers new evidence through /v1/decide, and its second attempt passes (`finalize`). The agent of every request is
// the key's agent: an agent_id in the body (top level or under `steward`) is ignored. The judge reads the acgp
// event's `goal` as the gate's goal, and `steward.goal` over it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startLlmServer } from '../../support/llm-server.js';
import { pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const BLUEPRINT = `id: code/http-gated@1.0
version: "1.0.0"
description: coding agent with a finalization gate, speaking HTTP
scope: { agent_tier: [ACL-2] }
finalization_gate:
  enabled: true
  max_retries: 2
  strictness: medium
`;
const KEY = 'k-http-gate';
const judge = (score: number, verdict: string, codes: string[] = [], missing: string[] = []) =>
  JSON.stringify({ quality_score: score, verdict, reason_codes: codes, fix_mode: 'REWRITE_ONLY', missing_requirements: missing });

describe('POST /v1/finalize through the gate stage (real Kafka, Redis; local OpenAI-protocol judge)', () => {
  it("the key's agent gets FAIL → replan with the directive, then, after new evidence over /v1/decide, PASS → finalize", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-gate-'));
    writeFileSync(join(dir, 'gated.yaml'), BLUEPRINT);
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - { id: http-coder, tenant: acme, tier: ACL-2, tools: [read_file, edit_file], api_keys: ["${apiKeyHash(KEY)}"] }\n`);
    const llm = await startLlmServer({ kind: 'content', content: judge(0.9, 'PASS') });
    const redisPrefix = uniqueRedisPrefix('http-gate');
    const redis = redisClient();
    try {
      await withPipelineEnv('http-gate', async ({ cfg: base }) => {
        const cfg = pipelineConfig(base.topics.prefix, {
          blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false },
          redis: { key_prefix: redisPrefix },
          llm: { base_url: llm.url, model: 'judge-test', timeout_ms: 20_000 },
          trust_debt: { audit_sweep_interval_ms: 0 },
          http: { enabled: true, port: 0 },
        });
        const logger = quietLogger();
        const rt = await bootstrapEngine(cfg, ['tripwire', 'gate'], logger);
        const pipe = await startPipeline(cfg, ['tripwire', 'gate'], rt.deps, { logger });
        const ing = await startHttpIngress(cfg, logger);
        const post = async (route: 'decide' | 'finalize', body: unknown) => {
          const r = await fetch(`http://127.0.0.1:${ing.port}/v1/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: JSON.stringify(body) });
          return { status: r.status, body: (await r.json()) as Record<string, any> };
        };
        let n = 0;
        const at = () => new Date(Date.UTC(2026, 4, 3, 9) + ++n * 1000).toISOString();
        const job = { job_id: 'job-h1', intent_id: 'CHANGE_IMPLEMENTATION', session_id: 's-h1' };
        const tool = (name: string) => post('decide', { trace_id: `t-${n}-${name}`, timestamp: at(), agent_id: 'spoofed', reasoning_text: `call ${name}`, timeout_ms: 15_000, steward: { ...job, tool: name, args: { path: 'src/app.ts' }, agent_id: 'spoofed' } });
        // The acgp event's final_output is the draft (contracts C5: draft_answer, or content) and its goal the gate's
        // goal unless `steward.goal` names one; the gate's other fields ride in `steward`.
        const answer = (traceId: string, draft: string, artifact: string, goals: { event: string; steward?: string }) =>
          post('finalize', { trace_id: traceId, timestamp: at(), agent_id: 'spoofed', goal: goals.event, final_output: draft, timeout_ms: 15_000, steward: { ...job, agent_id: 'spoofed', ...(goals.steward && { goal: goals.steward }), artifact_type: artifact } });
        try {
          await waitFor(() => pipe.isReady(), { timeoutMs: 30_000, message: 'tripwire and gate stages joined' });
          const read = await tool('read_file');
          expect(read).toMatchObject({ status: 200, body: { agent_id: 'http-coder', intervention: 'ok' } });

          // Attempt 0: the judge fails the draft → replan, with the directive the agent repairs from (§9.12).
          llm.script({ kind: 'content', content: judge(0.4, 'FAIL', ['UNSUPPORTED_SPECIFICS'], ['cite the validation code']) });
          const a0 = await answer('fa-0', 'Validation added (see line 42).', 'summary', { event: 'Validate the signup form somehow.', steward: 'Add input validation to the signup handler.' });
          expect(a0.status).toBe(200);
          expect(a0.body).toMatchObject({ trace_id: 'fa-0', agent_id: 'http-coder', job_id: 'job-h1', verdict: 'FAIL', action: 'replan', fix_mode: 'NEEDS_NEW_EVIDENCE', attempt_index: 0, judged_by: 'llm', intervention: 'block' });
          expect(a0.body.fallback).toBeUndefined();
          expect(a0.body.directive).toEqual(expect.stringContaining('You must repair the final answer'));
          // The judge saw this draft and the job's tool call recorded by the tripwire stage under the key's agent.
          const prompt0 = JSON.stringify(llm.requests.at(-1)!.body);
          expect(prompt0).toContain('Validation added (see line 42).');
          expect(prompt0).toContain('read_file');
          expect(prompt0).not.toContain('edit_file');
          // `steward.goal` wins over the event's.
          expect(prompt0).toContain('Add input validation to the signup handler.');
          expect(prompt0).not.toContain('Validate the signup form somehow.');

          // New evidence over HTTP, then attempt 1 passes.
          expect(await tool('edit_file')).toMatchObject({ status: 200, body: { agent_id: 'http-coder', intervention: 'ok' } });
          // Attempt 1 states its goal only as the acgp event's `goal` (what client.trace(goal=…) sends).
          const a1 = await answer('fa-1', 'Validation added in src/app.ts: email and password checks.', 'diff', { event: 'Add email and password validation to the signup handler.' });
          expect(a1.status).toBe(200);
          expect(a1.body).toMatchObject({ trace_id: 'fa-1', agent_id: 'http-coder', job_id: 'job-h1', verdict: 'PASS', action: 'finalize', attempt_index: 1, intervention: 'ok', directive: null });
          expect(a1.body.fallback).toBeUndefined();
          // The judge of attempt 1 saw the new tool call and the event's goal, not "(not given)" (audit #24 r2,
          // finding 7); it was asked once per attempt.
          const prompt1 = JSON.stringify(llm.requests.at(-1)!.body);
          expect(prompt1).toContain('edit_file');
          expect(prompt1).toContain('Add email and password validation to the signup handler.');
          expect(prompt1).not.toContain('(not given)');
          expect(llm.requests).toHaveLength(2);
          // The job's state is kept under the key's agent, nothing under the body's agent id.
          const jobKeys = await redis.keys(`${redisPrefix}gate:*`);
          expect(jobKeys.length).toBeGreaterThan(0);
          expect(jobKeys.every((k) => k.includes('http-coder') && !k.includes('spoofed'))).toBe(true);
          expect(await redis.keys(`${redisPrefix}*spoofed*`)).toEqual([]);
        } finally {
          await ing.close();
          await pipe.stop();
          await rt.close();
        }
      });
    } finally {
      await deleteRedisPrefix(redis, redisPrefix);
      await redis.quit();
      await llm.close();
    }
  }, 60_000);
});
