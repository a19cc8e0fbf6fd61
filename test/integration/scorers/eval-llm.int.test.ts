/**
 * `steward eval` end to end with STEWARD_LLM_BASE_URL pointing at the stand-in (real HTTP, OpenAI and
 * Anthropic wire protocols): llm metrics are scored over the wire; a provider failing with 500s makes them
 * unavailable and the tier fallback decides.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmServer, type LlmStandIn } from '../../support/llm-server.js';

const ROOT = join(import.meta.dirname, '../../..');
let srv: LlmStandIn;
beforeAll(async () => {
  srv = await startLlmServer();
});
afterAll(async () => {
  await srv.close();
});

function evalCli(lines: object[], env: Record<string, string>): Promise<{ code: number | null; out: Record<string, any>[]; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'eval', '--blueprints', join(ROOT, 'test/golden/eval/blueprints/core'), '-'], {
      env: { ...process.env, STEWARD_SIGNING_KEY: join(ROOT, 'test/golden/eval/keys/golden-ed25519.pem'), ...env },
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (err += c));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out: out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)), err }));
    p.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  });
}

const answer = (id: string, agent = 'a2') => ({ trace_id: id, agent_id: agent, timestamp: '2025-03-01T09:00:00Z', hook: 'answer', content: `text of ${id}` });

describe('steward eval with a real LLM endpoint', () => {
  it('OpenAI-compatible: scores over the wire', async () => {
    srv.setDefault({ kind: 'score', score: 0.5, delayMs: 20 });
    srv.requests.length = 0;
    const r = await evalCli([answer('w-1'), answer('w-2')], { STEWARD_LLM_BASE_URL: srv.url, STEWARD_LLM_MODEL: 'judge-1', STEWARD_LLM_API_KEY: 'k' });
    expect(r.code, r.err).toBe(0);
    expect(r.out.map((o) => [o.intervention, o.stage, o.ctq])).toEqual([
      ['escalate', 'ctq', 0.5],
      ['escalate', 'ctq', 0.5],
    ]);
    expect(srv.requests).toHaveLength(2);
    expect(srv.requests[0]).toMatchObject({ path: '/v1/chat/completions', body: { model: 'judge-1' } });
  });

  it('Anthropic messages provider', async () => {
    srv.setDefault({ kind: 'score', score: 0.95 });
    srv.requests.length = 0;
    const r = await evalCli([answer('w-3')], { STEWARD_LLM_BASE_URL: srv.url, STEWARD_LLM_PROVIDER: 'anthropic' });
    expect(r.code, r.err).toBe(0);
    expect(r.out[0]).toMatchObject({ intervention: 'ok', stage: 'ctq', ctq: 0.95 });
    expect(srv.requests[0].path).toBe('/v1/messages');
  });

  it('a provider answering 500 makes metrics unavailable; ACL-4 falls back to escalate, ACL-2 to flag', async () => {
    srv.setDefault({ kind: 'status', status: 500 });
    const r = await evalCli([answer('w-4', 'a2'), answer('w-5', 'a4')], { STEWARD_LLM_BASE_URL: srv.url });
    expect(r.code, r.err).toBe(0);
    expect(r.out[0]).toMatchObject({ intervention: 'flag', stage: 'ctq', ctq: null, metrics: [{ status: 'unavailable', score: null }] });
    expect(r.out[1]).toMatchObject({ intervention: 'escalate', stage: 'ctq', metrics: [{ status: 'unavailable' }] });
  });

  it('different agents overlap their judge calls; one agent stays strictly sequential', async () => {
    srv.setDefault({ kind: 'score', score: 0.9, delayMs: 100 });
    srv.maxConcurrent = 0;
    const many = ['a0', 'a2', 'a3', 'a4', 'a5'].flatMap((a) => [answer(`o-${a}-1`, a), answer(`o-${a}-2`, a)]);
    const r = await evalCli(many, { STEWARD_LLM_BASE_URL: srv.url });
    expect(r.code, r.err).toBe(0);
    expect(r.out.map((o) => o.trace_id)).toEqual(many.map((t) => t.trace_id));
    expect(srv.maxConcurrent).toBeGreaterThan(1);
    srv.maxConcurrent = 0;
    const one = [1, 2, 3, 4].map((i) => answer(`s-${i}`, 'a2'));
    const r2 = await evalCli(one, { STEWARD_LLM_BASE_URL: srv.url });
    expect(r2.out.map((o) => o.trace_id)).toEqual(one.map((t) => t.trace_id));
    expect(srv.maxConcurrent).toBe(1);
  });
});
