// The judge's deadline holds whatever the LLM client does: a client that never answers and ignores both the
// request's timeoutMs and any signal still gives on_judge_error at the deadline, once per call, and frees its
// slot for the next answer (the fast path has no AbortController of its own: judge.ts onceHolding).
import { describe, expect, it } from 'vitest';
import { GateJudge } from '../../../../src/engine/gate/index.js';
import type { LlmClient } from '../../../../src/engine/types.js';

const req = (timeoutMs: number, signal?: AbortSignal) => ({ system: 's', prompt: 'p', timeoutMs, allowedCodes: new Set<string>(), ...(signal && { signal }) });

describe('GateJudge deadline', () => {
  it('a client that never answers is cut off at the deadline; its slot is free again', async () => {
    let calls = 0;
    const llm: LlmClient = { complete: () => (calls++, new Promise(() => {})) };
    const judge = new GateJudge(llm, 1);
    const t0 = performance.now();
    const a = await judge.judge(req(40));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(35);
    expect(a).toMatchObject({ ok: false, calls: 1, error: { code: 'STEWARD_LLM_TIMEOUT', message: 'judge did not answer within 40 ms' } });
    // A timeout is not retried; the one slot was handed back, so the next answer gets a call of its own.
    const b = await judge.judge(req(20));
    expect(b).toMatchObject({ ok: false, calls: 1, error: { code: 'STEWARD_LLM_TIMEOUT' } });
    expect(calls).toBe(2);
    expect(judge.semaphore.tryAcquire()).toBe(true);
  });

  it('a client error is retried once (not a timeout); a caller’s abort still ends the call at once', async () => {
    const llm: LlmClient = { complete: () => Promise.reject(Object.assign(new Error('boom'), { code: 'STEWARD_LLM_HTTP' })) };
    expect(await new GateJudge(llm, 2).judge(req(1000))).toMatchObject({ ok: false, calls: 2, error: { code: 'STEWARD_LLM_HTTP', message: 'boom' } });
    const ac = new AbortController();
    const hang: LlmClient = { complete: () => new Promise(() => {}) };
    const p = new GateJudge(hang, 2).judge(req(10_000, ac.signal));
    setTimeout(() => ac.abort(new Error('shutting down')), 5);
    const t0 = performance.now();
    expect(await p).toMatchObject({ ok: false, calls: 1, error: { message: 'shutting down' } });
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});
