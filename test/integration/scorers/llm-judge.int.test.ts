/**
 * llm-judge over the real wire protocols against the stand-in server (test/support/llm-server.ts):
 * good, slow, failing, malformed and non-JSON answers; retries; bounded concurrency; cache.
 * Needs no external service; it lives here because it uses the network.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicClient, OpenAiCompatibleClient } from '../../../src/adapters/llm/index.js';
import { llmClientFromEnv } from '../../../src/config/llm.js';
import { LlmJudgeScorer, ScorerRegistry } from '../../../src/engine/scorers/index.js';
import type { ScorerContext } from '../../../src/engine/scorers/index.js';
import type { CompiledBlueprint, LlmClient, Trace } from '../../../src/engine/types.js';
import { startLlmServer, type LlmStandIn } from '../../support/llm-server.js';

let srv: LlmStandIn;
beforeAll(async () => {
  srv = await startLlmServer();
});
afterAll(async () => {
  await srv.close();
});
beforeEach(() => {
  srv.requests.length = 0;
  srv.maxConcurrent = 0;
  srv.setDefault({ kind: 'score', score: 0.8 });
});

let seq = 0;
const trace = (): Trace => ({ trace_id: `t-${++seq}`, agent_id: 'a', timestamp: '2025-01-01T00:00:00Z', hook: 'output', content: `answer ${seq}` });

function setup(llm: LlmClient, judge = new LlmJudgeScorer({ backoffMs: 5, timeoutMs: 500, retries: 2 })) {
  const registry = new ScorerRegistry().register(judge);
  const ctx: ScorerContext = {
    blueprint: { rules: [], tripwires: [] } as unknown as CompiledBlueprint,
    agent: { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true },
    nowMs: 0,
    llm,
    registry,
  };
  return { judge, ctx };
}

describe('OpenAI-compatible chat completions', () => {
  it('sends the chat-completions request and scores the JSON answer', async () => {
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url, apiKey: 'k-1', model: 'judge-m' }));
    const r = await judge.evaluate(trace(), { prompt_template: 'clarity', temperature: 0, max_tokens: 64 }, ctx);
    expect(r.score).toBe(0.8);
    const req = srv.requests[0];
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer k-1');
    expect(req.body).toMatchObject({ model: 'judge-m', temperature: 0, max_tokens: 64 });
    expect((req.body.messages as { role: string }[]).map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('retries 500 and 429 with backoff, then succeeds', async () => {
    srv.script({ kind: 'status', status: 500 }, { kind: 'status', status: 429 });
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }));
    expect((await judge.evaluate(trace(), {}, ctx)).score).toBe(0.8);
    expect(srv.requests).toHaveLength(3);
  });

  it('gives up after the retries: unavailable (retryable error), no score', async () => {
    srv.setDefault({ kind: 'status', status: 503 });
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }));
    await expect(judge.evaluate(trace(), { retries: 1 }, ctx)).rejects.toMatchObject({ code: 'STEWARD_LLM_HTTP', retryable: true });
    expect(srv.requests).toHaveLength(2);
  });

  it('does not retry a 401', async () => {
    srv.script({ kind: 'status', status: 401 });
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }));
    await expect(judge.evaluate(trace(), {}, ctx)).rejects.toMatchObject({ code: 'STEWARD_LLM_HTTP', retryable: false });
    expect(srv.requests).toHaveLength(1);
  });

  it('times out a slow answer (AbortSignal) and reports STEWARD_LLM_TIMEOUT', async () => {
    srv.setDefault({ kind: 'hang' });
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }));
    const t0 = performance.now();
    await expect(judge.evaluate(trace(), { timeout_ms: 100, retries: 0 }, ctx)).rejects.toMatchObject({ code: 'STEWARD_LLM_TIMEOUT' });
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('a slow answer within the timeout is used', async () => {
    srv.script({ kind: 'score', score: 0.3, delayMs: 150 });
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }));
    expect((await judge.evaluate(trace(), { timeout_ms: 1000 }, ctx)).score).toBe(0.3);
  });

  it('malformed JSON bodies and non-JSON content are unavailable, never a score', async () => {
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }));
    srv.script({ kind: 'malformed-body' });
    await expect(judge.evaluate(trace(), {}, ctx)).rejects.toMatchObject({ code: 'STEWARD_LLM_RESPONSE' });
    srv.script({ kind: 'content', content: 'I would rate this 0.9 out of 1.' });
    await expect(judge.evaluate(trace(), {}, ctx)).rejects.toMatchObject({ code: 'STEWARD_LLM_RESPONSE' });
    srv.script({ kind: 'content', content: '{"score": 7}' });
    await expect(judge.evaluate(trace(), {}, ctx)).rejects.toMatchObject({ code: 'STEWARD_LLM_RESPONSE' });
  });

  it('bounds calls in flight and caches identical prompts', async () => {
    srv.setDefault({ kind: 'score', score: 0.5, delayMs: 50 });
    const { judge, ctx } = setup(new OpenAiCompatibleClient({ baseUrl: srv.url }), new LlmJudgeScorer({ maxInFlight: 3 }));
    const traces = Array.from({ length: 12 }, trace);
    await Promise.all(traces.map((t) => judge.evaluate(t, {}, ctx)));
    expect(srv.maxConcurrent).toBe(3);
    expect(srv.requests).toHaveLength(12);
    const again = await judge.evaluate(traces[0], {}, ctx);
    expect(again.evidence.cached).toBe(true);
    expect(srv.requests).toHaveLength(12);
  });
});

describe('Anthropic messages', () => {
  it('speaks /v1/messages with x-api-key and anthropic-version', async () => {
    srv.script({ kind: 'score', score: 0.65 });
    const { judge, ctx } = setup(new AnthropicClient({ baseUrl: srv.url, apiKey: 'ak', model: 'claude-x' }));
    expect((await judge.evaluate(trace(), { max_tokens: 100 }, ctx)).score).toBe(0.65);
    const req = srv.requests[0];
    expect(req.path).toBe('/v1/messages');
    expect(req.headers['x-api-key']).toBe('ak');
    expect(req.headers['anthropic-version']).toBeTruthy();
    expect(req.body).toMatchObject({ model: 'claude-x', max_tokens: 100 });
    expect(typeof req.body.system).toBe('string');
  });
});

describe('llmClientFromEnv', () => {
  it('no base URL means no LLM; provider picks the protocol', () => {
    expect(llmClientFromEnv({})).toBeUndefined();
    expect(llmClientFromEnv({ STEWARD_LLM_BASE_URL: srv.url })).toBeInstanceOf(OpenAiCompatibleClient);
    expect(llmClientFromEnv({ STEWARD_LLM_BASE_URL: srv.url, STEWARD_LLM_PROVIDER: 'anthropic' })).toBeInstanceOf(AnthropicClient);
    expect(() => llmClientFromEnv({ STEWARD_LLM_BASE_URL: srv.url, STEWARD_LLM_PROVIDER: 'x' })).toThrow(/openai or anthropic/);
  });
});
