/**
 * D45: a tool call without job_id is held by the agent's rewrite-only jobs (§9.7 "no tools"), through the agent's
 * index of them (src/engine/gate/agent-index.ts) — finalize() and decideChunk keep it, checkToolCall reads it and
 * confirms each listed job against its own state.
 */
import { describe, expect, it } from 'vitest';
import { decideChunk, FinalizationGate, MemoryGateJobStore, recordAttempt } from '../../../../src/engine/gate/index.js';
import { judgeCanApply, MAX_REWRITE_ONLY_JOBS, setRewriteOnly } from '../../../../src/engine/gate/agent-index.js';
import type { AgentInfo, Trace } from '../../../../src/engine/types.js';
import { compileOne, ScriptedLlm } from './helpers.js';
import { DEFAULT_GATE_RUNTIME_LIMITS } from '../../../../src/engine/gate/types.js';

const bp = compileOne('id: ai@1.0\nversion: "1.0.0"\ndescription: agent index\n');
const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const T = Date.parse('2026-01-01T00:00:00Z');
const REWRITE = '{"quality_score":0.7,"verdict":"PASS_WITH_CAVEATS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}';
const REPLAN = '{"quality_score":0.4,"verdict":"FAIL","reason_codes":[],"fix_mode":"NEEDS_NEW_EVIDENCE","missing_requirements":[]}';
const fa = (id: string, job: string): Trace => ({ trace_id: id, agent_id: agent.id, timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: job, draft_answer: `draft ${id}` });
const tc = (id: string, job?: string): Trace => ({ trace_id: id, agent_id: agent.id, timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'search', args: {}, ...(job && { job_id: job }) });

function setup() {
  const llm = new ScriptedLlm();
  const store = new MemoryGateJobStore();
  return { llm, store, gate: new FinalizationGate({ llm, jobStore: store }) };
}

describe('job-less tool calls and rewrite-only jobs (D45)', () => {
  it('blocked while any job of the agent is rewrite-only, allowed again after its next answer; other jobs are not held', async () => {
    const { llm, store, gate } = setup();
    expect((await gate.checkToolCall(tc('c0'), agent, bp, T)).intervention).toBe('ok');
    llm.queue.push(REWRITE);
    expect((await gate.finalize(fa('f1', 'j1'), agent, bp, T, 'e-f1')).action).toBe('rewrite');
    expect(await store.getAgent({ tenant: 'acme', agentId: 'agent-1' }, T)).toMatchObject({ rewrite_only: { j1: T } });
    expect(await gate.checkToolCall(tc('c1'), agent, bp, T + 1)).toMatchObject({ intervention: 'block', rewrite_only: true, hits: [{ kind: 'rewrite_only', message: expect.stringContaining("'j1'") }] });
    // a call of another job is its own job's business
    expect((await gate.checkToolCall(tc('c2', 'j2'), agent, bp, T + 1)).intervention).toBe('ok');
    // another agent is not held
    expect((await gate.checkToolCall({ ...tc('c3'), agent_id: 'agent-2' }, { ...agent, id: 'agent-2' }, bp, T + 1)).intervention).toBe('ok');
    llm.queue.push(REPLAN);
    // its next answer (here the anti-loop ending: nothing changed) ends the rewrite-only state
    expect((await gate.finalize(fa('f2', 'j1'), agent, bp, T + 2, 'e-f2')).action).toBe('finalize_with_limitations');
    expect((await store.getAgent({ tenant: 'acme', agentId: 'agent-1' }, T + 2))!.rewrite_only).toEqual({});
    expect((await gate.checkToolCall(tc('c4'), agent, bp, T + 3)).intervention).toBe('ok');
  });

  it('an index entry whose job is no longer rewrite-only blocks nothing (a crash between the two writes, an expired job)', async () => {
    const { store, gate } = setup();
    const a = { tenant: 'acme', agentId: 'agent-1' };
    await store.updateAgent(a, T, (p) => setRewriteOnly(p, 'gone', T, T));
    await store.update({ ...a, jobId: 'done' }, T, (p) => recordAttempt(p, { ...a, jobId: 'done' }, { event_id: 'x', ts_ms: T, abstraction_level: null, artifact_type: null, clarification: null, action: 'replan', verdict: 'FAIL' }, T, 16));
    await store.updateAgent(a, T, (p) => setRewriteOnly(p, 'done', T, T));
    expect((await gate.checkToolCall(tc('c1'), agent, bp, T + 1)).intervention).toBe('ok');
  });

  it('a redelivered rewrite writes its index entry again (the first delivery may have stopped before it)', async () => {
    const { llm, store, gate } = setup();
    llm.queue.push(REWRITE);
    await gate.finalize(fa('f1', 'j1'), agent, bp, T, 'e-f1');
    await store.updateAgent({ tenant: 'acme', agentId: 'agent-1' }, T, (p) => setRewriteOnly(p, 'j1', null, T));
    expect((await gate.checkToolCall(tc('c1'), agent, bp, T + 1)).intervention).toBe('ok');
    expect((await gate.finalize(fa('f1', 'j1'), agent, bp, T, 'e-f1')).redelivered).toBe(true);
    expect((await gate.checkToolCall(tc('c2'), agent, bp, T + 1)).intervention).toBe('block');
  });

  it('decideChunk keeps the index as finalize() does', async () => {
    const { llm, store, gate } = setup();
    llm.queue.push(REWRITE);
    const [r] = await decideChunk(gate, [{ hook: 'final_answer', trace: fa('f1', 'j1'), agent, blueprint: bp, nowMs: T, eventId: 'e-f1' }]);
    expect(r).toMatchObject({ outcome: { action: 'rewrite' } });
    expect((await gate.checkToolCall(tc('c1'), agent, bp, T + 1)).intervention).toBe('block');
    llm.queue.push(REPLAN);
    await decideChunk(gate, [{ hook: 'final_answer', trace: fa('f2', 'j1'), agent, blueprint: bp, nowMs: T + 2, eventId: 'e-f2' }]);
    expect((await store.getAgent({ tenant: 'acme', agentId: 'agent-1' }, T + 2))!.rewrite_only).toEqual({});
    expect((await gate.checkToolCall(tc('c2'), agent, bp, T + 3)).intervention).toBe('ok');
  });

  it('setRewriteOnly: adds, removes, drops entries a day old and keeps the newest MAX_REWRITE_ONLY_JOBS', () => {
    let s = setRewriteOnly(undefined, 'a', T, T);
    s = setRewriteOnly(s, 'b', T + 5, T + 5);
    expect(s.rewrite_only).toEqual({ a: T, b: T + 5 });
    expect(setRewriteOnly(s, 'a', null, T + 6).rewrite_only).toEqual({ b: T + 5 });
    expect(setRewriteOnly(s, 'c', T + 25 * 3_600_000, T + 25 * 3_600_000).rewrite_only).toEqual({ c: T + 25 * 3_600_000 });
    for (let i = 0; i < MAX_REWRITE_ONLY_JOBS + 3; i++) s = setRewriteOnly(s, `j${i}`, T + 10 + i, T + 10 + i);
    expect(Object.keys(s.rewrite_only)).toHaveLength(MAX_REWRITE_ONLY_JOBS);
    expect(s.rewrite_only.a).toBeUndefined();
    expect(s.rewrite_only[`j${MAX_REWRITE_ONLY_JOBS + 2}`]).toBe(T + 12 + MAX_REWRITE_ONLY_JOBS);
  });

  it('an abandoned rewrite-only job holds job-less calls for rewriteOnlyHoldMs after its directive only; its own calls stay held', async () => {
    const { llm, gate } = setup();
    const hold = DEFAULT_GATE_RUNTIME_LIMITS.rewriteOnlyHoldMs;
    expect(hold).toBe(15 * 60_000);
    llm.queue.push(REWRITE);
    expect((await gate.finalize(fa('f1', 'abandoned'), agent, bp, T, 'e-f1')).action).toBe('rewrite');
    expect((await gate.checkToolCall(tc('c1'), agent, bp, T + hold)).intervention).toBe('block');
    expect((await gate.checkToolCall(tc('c2'), agent, bp, T + hold + 1)).intervention).toBe('ok');
    expect((await gate.checkToolCall(tc('c3'), agent, bp, T + 6 * 3_600_000)).intervention).toBe('ok');
    // the job's own state still holds a call that names it (§9.7, until its next answer)
    expect((await gate.checkToolCall(tc('c4', 'abandoned'), agent, bp, T + 6 * 3_600_000)).intervention).toBe('block');
    // another job's rewrite directive holds job-less calls from its own time
    llm.queue.push(REWRITE);
    const later = T + 7 * 3_600_000;
    expect((await gate.finalize(fa('f2', 'j2'), agent, bp, later, 'e-f2')).action).toBe('rewrite');
    expect(await gate.checkToolCall(tc('c5'), agent, bp, later + 1)).toMatchObject({ intervention: 'block', hits: [{ message: expect.not.stringContaining("'abandoned'") }] });
    // the window is a runtime limit
    const store = new MemoryGateJobStore();
    const short = new FinalizationGate({ llm, jobStore: store, limits: { rewriteOnlyHoldMs: 1000 } });
    llm.queue.push(REWRITE);
    await short.finalize(fa('f3', 'j3'), agent, bp, T, 'e-f3');
    expect((await short.checkToolCall(tc('c6'), agent, bp, T + 1000)).intervention).toBe('block');
    expect((await short.checkToolCall(tc('c7'), agent, bp, T + 1001)).intervention).toBe('ok');
  });

  it('no index read for a job-less call when no judge can apply to the agent (base and its skills disabled)', async () => {
    const skilled = compileOne(`id: ai@1.0
version: "1.0.0"
description: agent index
finalization_gate:
  enabled: false
  skills:
    refunds: { enabled: true }
    chat: { strictness: low }
`);
    const store = new MemoryGateJobStore();
    let reads = 0;
    const getAgent = store.getAgent.bind(store);
    store.getAgent = (...a) => ((reads += 1), getAgent(...a));
    const gate = new FinalizationGate({ llm: new ScriptedLlm(), jobStore: store });
    const chatOnly = { ...agent, skills: ['chat'] };
    expect((await gate.checkToolCall(tc('c1'), chatOnly, skilled, T)).intervention).toBe('ok');
    expect((await gate.checkToolCall(tc('c2'), { ...agent, skills: [] }, skilled, T)).intervention).toBe('ok');
    // skill_id naming a skill the registry does not list for the agent adds nothing
    expect((await gate.checkToolCall({ ...tc('c3'), skill_id: 'refunds' }, chatOnly, skilled, T)).intervention).toBe('ok');
    expect(reads).toBe(0);
    // a listed skill with a judge, or a base with one: the index is read
    await gate.checkToolCall(tc('c4'), { ...agent, skills: ['chat', 'refunds'] }, skilled, T);
    expect(reads).toBe(1);
    await gate.checkToolCall(tc('c5'), chatOnly, bp, T);
    expect(reads).toBe(2);
    // a call naming its job reads no index either way
    await gate.checkToolCall(tc('c6', 'j1'), { ...agent, skills: ['refunds'] }, skilled, T);
    expect(reads).toBe(2);
    expect(judgeCanApply(skilled.gate!, ['chat'])).toBe(false);
    expect(judgeCanApply(skilled.gate!, ['refunds'])).toBe(true);
    expect(judgeCanApply(bp.gate!, undefined)).toBe(true);
  });
});
