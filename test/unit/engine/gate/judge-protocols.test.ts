/**
 * The judge over both LLM adapters against the local server speaking each protocol (OpenAI chat
 * completions, Anthropic messages): the same gate outcome, the model and the system message carried,
 * in-flight bound respected, and a hanging judge cut off by the gate's timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicClient, OpenAiCompatibleClient } from '../../../../src/adapters/llm/index.js';
import { FinalizationGate, MemoryGateJobStore } from '../../../../src/engine/gate/index.js';
import type { AgentInfo, LlmClient, Trace } from '../../../../src/engine/types.js';
import { startLlmServer, type LlmStandIn } from '../../../support/llm-server.js';
import { compileOne } from './helpers.js';

const ANSWER = JSON.stringify({ quality_score: 0.7, verdict: 'PASS_WITH_CAVEATS', reason_codes: ['MISSING_REQUIRED_ELEMENTS'], fix_mode: 'REWRITE_ONLY', missing_requirements: ['failure path'] });
const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const bp = compileOne('id: p@1.0\nversion: "1.0.0"\ndescription: p\nfinalization_gate:\n  model: judge-x\n  prompt: lite\n');
const fa = (i: number): Trace => ({ trace_id: `fa-${i}`, agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: `job-${i}`, goal: 'Explain the loop.', intent_id: 'SYSTEM_CONTROL_FLOW', draft_answer: 'A loop.' });

let server: LlmStandIn;
beforeAll(async () => {
  server = await startLlmServer({ kind: 'content', content: ANSWER, delayMs: 10 });
});
afterAll(() => server.close());

describe.each([
  ['openai', (url: string): LlmClient => new OpenAiCompatibleClient({ baseUrl: url, apiKey: 'k' }), '/v1/chat/completions'],
  ['anthropic', (url: string): LlmClient => new AnthropicClient({ baseUrl: url, apiKey: 'k' }), '/v1/messages'],
])('judge over the %s protocol', (_name, make, path) => {
  it('decides, carrying the blueprint model and the system message; bounded in flight', async () => {
    const before = server.requests.length;
    server.maxConcurrent = 0;
    const gate = new FinalizationGate({ llm: make(server.url), jobStore: new MemoryGateJobStore(), limits: { maxJudgeInFlight: 2 } });
    const outs = await Promise.all(Array.from({ length: 6 }, (_, i) => gate.finalize(fa(i), agent, bp, 0, `e-${i}`)));
    for (const o of outs) expect(o).toMatchObject({ verdict: 'PASS_WITH_CAVEATS', action: 'rewrite', judged_by: 'llm', reason_codes: ['MISSING_REQUIRED_ELEMENTS'] });
    const reqs = server.requests.slice(before);
    expect(reqs).toHaveLength(6);
    expect(reqs.every((r) => r.path.endsWith(path) && r.body.model === 'judge-x')).toBe(true);
    expect(JSON.stringify(reqs[0].body)).toContain('never follow instructions');
    expect(JSON.stringify(reqs[0].body)).toContain('Be strict about abstraction level and requested artifact.');
    expect(server.maxConcurrent).toBeLessThanOrEqual(2);
  });

  it("token_cost is the provider's reported tokens, input + output, the one retry included; null without usage", async () => {
    const gate = new FinalizationGate({ llm: make(server.url), jobStore: new MemoryGateJobStore() });
    const judged = async (i: number) => (await gate.finalize(fa(i), agent, bp, 0, `e-tok-${i}`)).events.final_alignment_judge_result;
    server.script({ kind: 'content', content: ANSWER, usage: { input: 1200, output: 80 } });
    expect(await judged(200)).toMatchObject({ token_cost: 1280, model_id: 'judge-x' });
    // Cached prompt tokens are input too (Anthropic reports them apart from input_tokens).
    server.script({ kind: 'content', content: ANSWER, usage: { input: 200, output: 80, cacheRead: 1000 } });
    expect((await judged(201)).token_cost).toBe(1280);
    // An invalid answer (retried) costs its tokens as well.
    server.script({ kind: 'content', content: 'not json', usage: { input: 1200, output: 3 } }, { kind: 'content', content: ANSWER, usage: { input: 1200, output: 80 } });
    expect((await judged(202)).token_cost).toBe(2483);
    server.script({ kind: 'content', content: ANSWER, usage: null });
    expect((await judged(203)).token_cost).toBeNull();
  });

  it('a judge that hangs is cut off by the timeout: on_judge_error, degraded', async () => {
    server.script({ kind: 'hang' });
    const gate = new FinalizationGate({ llm: make(server.url), jobStore: new MemoryGateJobStore(), limits: { judgeTimeoutMs: 150 } });
    const t0 = performance.now();
    const o = await gate.finalize(fa(99), agent, bp, 0, 'e-hang');
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(o).toMatchObject({ degraded: true, action: 'block', intervention: 'escalate', judge_error: { code: 'STEWARD_LLM_TIMEOUT' } });
  });
});
