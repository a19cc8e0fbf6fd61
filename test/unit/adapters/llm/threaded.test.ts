/**
 * llm.thread: the LLM client whose HTTP exchanges run on a worker thread. Against the local server speaking
 * both protocols it answers exactly as the direct client does (text, model, error code, message and retryable
 * flag for each scripted failure, the timeout, a caller's abort), the gate's judge keeps its in-flight bound
 * and timeout over it, a thread that dies fails its calls in flight as retryable and a new one serves the next
 * call, and close() ends the thread.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmClient, ThreadedLlmClient } from '../../../../src/adapters/llm/index.js';
import { FinalizationGate, MemoryGateJobStore } from '../../../../src/engine/gate/index.js';
import type { AgentInfo, LlmClient, LlmRequest, Trace } from '../../../../src/engine/types.js';
import { StewardError } from '../../../../src/errors.js';
import { startLlmServer, type Behaviour, type LlmStandIn } from '../../../support/llm-server.js';
import { compileOne } from '../../engine/gate/helpers.js';

let server: LlmStandIn;
const threaded: ThreadedLlmClient[] = [];
beforeAll(async () => {
  server = await startLlmServer({ kind: 'content', content: 'fine' });
});
afterAll(async () => {
  await Promise.all(threaded.map((c) => c.close()));
  await server.close();
});

const req = (timeoutMs = 5000): LlmRequest => ({ system: 'sys', prompt: 'p', temperature: 0, maxTokens: 64, timeoutMs, model: 'm-1' });
async function thread(provider: string): Promise<ThreadedLlmClient> {
  const c = createLlmClient({ provider, baseUrl: server.url, apiKey: 'k', thread: true });
  expect(c).toBeInstanceOf(ThreadedLlmClient);
  threaded.push(c as ThreadedLlmClient);
  await (c as ThreadedLlmClient).ready();
  return c as ThreadedLlmClient;
}

/** What a call ended with, comparable across clients (latency aside). */
async function outcome(c: LlmClient, b: Behaviour | undefined, r: LlmRequest, signal?: AbortSignal): Promise<unknown> {
  if (b) server.script(b);
  try {
    const res = await c.complete(r, signal);
    return { text: res.text, model: res.model, usage: res.usage };
  } catch (e) {
    expect(e).toBeInstanceOf(StewardError);
    const err = e as StewardError;
    return { code: err.code, message: err.message, retryable: err.retryable, details: err.details };
  }
}

describe.each(['openai', 'anthropic'])('threaded LLM client over the %s protocol', (provider) => {
  const cases: [string, Behaviour | undefined, number?][] = [
    ['an answer', { kind: 'content', content: '{"a":1}' }],
    ['an answer with token usage (cached prompt tokens too)', { kind: 'content', content: '{"a":2}', usage: { input: 321, output: 12, cacheRead: 7 } }],
    ['an answer without usage', { kind: 'content', content: '{"a":3}', usage: null }],
    ['HTTP 429 (retryable)', { kind: 'status', status: 429 }],
    ['HTTP 503 (retryable)', { kind: 'status', status: 503, body: 'down' }],
    ['HTTP 400 (not retryable)', { kind: 'status', status: 400 }],
    ['a malformed body', { kind: 'malformed-body' }],
    ['a timeout', { kind: 'hang' }, 100],
  ];
  it.each(cases)('%s: the same outcome as the direct client', async (_what, b, timeoutMs) => {
    const direct = createLlmClient({ provider, baseUrl: server.url, apiKey: 'k' });
    const want = await outcome(direct, b, req(timeoutMs));
    const got = await outcome(await thread(provider), b, req(timeoutMs));
    expect(got).toEqual(want);
    if (b?.kind === 'content') {
      // Both protocols' wire fields read the same: input (cached prompt tokens included) and output tokens.
      const usage = b.usage === undefined ? { inputTokens: 1, outputTokens: 1 } : b.usage === null ? undefined : { inputTokens: b.usage.input + (b.usage.cacheRead ?? 0), outputTokens: b.usage.output };
      expect(got).toEqual({ text: b.content, model: 'm-1', usage });
    }
  });

  it("a caller's abort: answered at once as by the direct client, the exchange is cancelled", async () => {
    const c = await thread(provider);
    const direct = createLlmClient({ provider, baseUrl: server.url, apiKey: 'k' });
    const run = async (x: LlmClient) => {
      const ac = new AbortController();
      const seen = server.requests.length;
      // aborted once the server holds the request (the scripted hang is used up either way)
      void waitFor(() => server.requests.length > seen).then(() => ac.abort(new Error('caller gave up')));
      const t0 = performance.now();
      const o = await outcome(x, { kind: 'hang' }, req(10_000), ac.signal);
      return { o, ms: performance.now() - t0 };
    };
    const want = await run(direct);
    const got = await run(c);
    expect(got.o).toEqual(want.o);
    expect(got.o).toMatchObject({ code: 'STEWARD_LLM_TIMEOUT', retryable: false });
    expect(got.ms).toBeLessThan(1000);
    // an already aborted signal never reaches the server
    const before = server.requests.length;
    expect(await outcome(c, undefined, req(), AbortSignal.abort())).toEqual(await outcome(direct, undefined, req(), AbortSignal.abort()));
    expect(server.requests.length).toBe(before);
  });
});

describe('threaded LLM client: the gate over it, a dying thread, shutdown', () => {
  const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
  const bp = compileOne('id: p@1.0\nversion: "1.0.0"\ndescription: p\nfinalization_gate:\n  model: judge-x\n  prompt: lite\n');
  const fa = (i: number): Trace => ({ trace_id: `fa-${i}`, agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: `job-${i}`, goal: 'Explain the loop.', intent_id: 'SYSTEM_CONTROL_FLOW', draft_answer: 'A loop.' });
  const ANSWER = JSON.stringify({ quality_score: 0.7, verdict: 'PASS_WITH_CAVEATS', reason_codes: ['MISSING_REQUIRED_ELEMENTS'], fix_mode: 'REWRITE_ONLY', missing_requirements: ['failure path'] });

  it('the judge decides over it, bounded in flight; a hanging judge is cut off by the gate timeout', async () => {
    const c = await thread('openai');
    server.setDefault({ kind: 'content', content: ANSWER, delayMs: 10 });
    try {
      server.maxConcurrent = 0;
      const gate = new FinalizationGate({ llm: c, jobStore: new MemoryGateJobStore(), limits: { maxJudgeInFlight: 2 } });
      const outs = await Promise.all(Array.from({ length: 6 }, (_, i) => gate.finalize(fa(i), agent, bp, 0, `e-${i}`)));
      for (const o of outs) expect(o).toMatchObject({ verdict: 'PASS_WITH_CAVEATS', action: 'rewrite', judged_by: 'llm' });
      expect(server.maxConcurrent).toBeLessThanOrEqual(2);
      server.script({ kind: 'hang' });
      const slow = new FinalizationGate({ llm: c, jobStore: new MemoryGateJobStore(), limits: { judgeTimeoutMs: 150 } });
      expect(await slow.finalize(fa(99), agent, bp, 0, 'e-hang')).toMatchObject({ degraded: true, judge_error: { code: 'STEWARD_LLM_TIMEOUT' } });
    } finally {
      server.setDefault({ kind: 'content', content: 'fine' });
    }
  });

  it('a thread that dies: its calls in flight fail as retryable, a new thread answers the next call', async () => {
    const c = await thread('openai');
    expect(c.spawned).toBe(1);
    server.script({ kind: 'hang' });
    const seen = server.requests.length;
    const inFlight = c.complete(req(10_000));
    await waitFor(() => server.requests.length > seen);
    // The thread ends under the client (as a crash would: not through close()).
    await (c as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(inFlight).rejects.toMatchObject({ code: 'STEWARD_LLM_HTTP', retryable: true });
    expect(await c.complete(req())).toMatchObject({ text: 'fine', model: 'm-1' });
    expect(c.spawned).toBe(2);
  });

  it('a thread that cannot be started: the calls fail as retryable, the next call starts one', async () => {
    const c = createLlmClient({ provider: 'openai', baseUrl: server.url, thread: true }) as ThreadedLlmClient;
    threaded.push(c);
    // As Worker's constructor throws when the process is out of threads or memory.
    (c as unknown as { start: () => never }).start = () => {
      throw new Error('no threads left');
    };
    await expect(c.complete(req())).rejects.toMatchObject({ code: 'STEWARD_LLM_HTTP', retryable: true, message: expect.stringContaining('no threads left') });
    delete (c as unknown as { start?: unknown }).start;
    expect(await c.complete(req())).toMatchObject({ text: 'fine' });
    expect(c.spawned).toBe(1);
  });

  it('close() ends the thread; calls in flight fail as retryable, later calls are refused', async () => {
    const c = await thread('anthropic');
    const w = (c as unknown as { worker: { once(ev: 'exit', f: (code: number) => void): void } }).worker;
    const exited = new Promise<number>((r) => w.once('exit', r));
    server.script({ kind: 'hang' });
    const seen = server.requests.length;
    const inFlight = c.complete(req(10_000));
    inFlight.catch(() => undefined);
    await waitFor(() => server.requests.length > seen);
    await c.close();
    await expect(inFlight).rejects.toMatchObject({ code: 'STEWARD_LLM_HTTP', retryable: true });
    await expect(exited).resolves.toBeTypeOf('number');
    await expect(c.complete(req())).rejects.toMatchObject({ code: 'STEWARD_LLM_HTTP' });
  });

  it('a provider other than openai or anthropic is a configuration error at construction', () => {
    expect(() => createLlmClient({ provider: 'other', baseUrl: server.url, thread: true })).toThrow(/llm.provider/);
  });
});

async function waitFor(f: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!f()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
