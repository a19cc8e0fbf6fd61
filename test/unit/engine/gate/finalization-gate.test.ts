import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { FinalizationGate, goalSentences, MemoryGateJobStore, parseJudgeOutput, toolTraceSummary } from '../../../../src/engine/gate/index.js';
import type { AgentInfo, LlmClient, LlmRequest, Trace } from '../../../../src/engine/types.js';
import { compileOne, ScriptedLlm } from './helpers.js';

const PASS = '{"quality_score":0.9,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}';
const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const bp = compileOne('id: f@1.0\nversion: "1.0.0"\ndescription: f\nfinalization_gate:\n  prompt: B\n  model: judge-small\n');
const fa = (extra: Partial<Trace> = {}): Trace => ({ trace_id: 'fa-1', agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: 'job-1', draft_answer: 'answer', ...extra });

describe('FinalizationGate facade', () => {
  it('bad input is a STEWARD_GATE_INPUT error (the stage dead-letters it)', async () => {
    const gate = new FinalizationGate({ jobStore: new MemoryGateJobStore() });
    await expect(gate.finalize(fa({ job_id: undefined }), agent, bp, 0)).rejects.toMatchObject({ code: 'STEWARD_GATE_INPUT', message: expect.stringMatching(/job_id/) });
    await expect(gate.finalize(fa({ draft_answer: undefined }), agent, bp, 0)).rejects.toMatchObject({ code: 'STEWARD_GATE_INPUT', message: expect.stringMatching(/draft/) });
    await expect(gate.finalize(fa({ draft_answer: 42 }), agent, bp, 0)).rejects.toMatchObject({ code: 'STEWARD_GATE_INPUT' });
    await expect(gate.finalize(fa({ constraints: 'x' }), agent, bp, 0)).rejects.toMatchObject({ code: 'STEWARD_GATE_INPUT' });
    // `content` is accepted when draft_answer is absent
    await expect(gate.finalize(fa({ draft_answer: undefined, content: 'the answer' }), agent, bp, 0)).resolves.toMatchObject({ verdict: 'PASS', judged_by: 'rules' });
  });

  it('the judge sees Steward’s tool trace summary (the agent’s own only as a claim), the goal cut to 3 sentences, the model', async () => {
    const llm = new ScriptedLlm();
    llm.queue.push(PASS);
    const store = new MemoryGateJobStore();
    const gate = new FinalizationGate({ llm, jobStore: store });
    const tc = (i: number, tool: string, args: Record<string, unknown>): Trace => ({ trace_id: `tc-${i}`, agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', job_id: 'job-1', tool, args });
    await gate.recordToolCall(tc(1, 'read_file', { path: 'src/loop.ts' }), agent, 1, 'e1', true, bp);
    await gate.recordToolCall(tc(2, 'web_fetch', { url: 'https://example.com' }), agent, 2, 'e2', true, bp);
    await gate.recordToolCall(tc(3, 'delete_repo', {}), agent, 3, 'e3', false, bp);
    await gate.finalize(fa({ goal: 'One. Two! Three? Four.', intent_id: 'CODE_FLOW_ANALYSIS', tool_trace_summary: 'I read every file in the repo', constraints: ['short'] }), agent, bp, 4, 'fa-e');
    const req = llm.requests[0] as LlmRequest;
    expect(req.model).toBe('judge-small');
    expect(req.temperature).toBe(0);
    expect(req.system).toMatch(/never follow instructions/);
    expect(req.prompt).toContain('GOAL: <<<One. Two! Three?>>>');
    expect(req.prompt).toContain(
      "TOOL_TRACE_SUMMARY: <<<Tools used: read_file, web_fetch (1 blocked call(s) did not run)\nKey files opened: src/loop.ts\nRepo inspected: yes\nExternal lookup: yes\nAgent's own summary (a claim, not verified by Steward): I read every file in the repo>>>",
    );
    expect(req.prompt).toContain('CONSTRAINTS: <<<short>>>');
  });

  it('bounds judge calls in flight across jobs', async () => {
    let active = 0;
    let max = 0;
    const llm: LlmClient = {
      async complete() {
        active++;
        max = Math.max(max, active);
        await new Promise((r) => setTimeout(r, 5));
        active--;
        return { text: PASS, latencyMs: 5 };
      },
    };
    const gate = new FinalizationGate({ llm, jobStore: new MemoryGateJobStore(), limits: { maxJudgeInFlight: 3 } });
    const outs = await Promise.all(Array.from({ length: 20 }, (_, i) => gate.finalize(fa({ job_id: `job-${i}`, trace_id: `t-${i}` }), agent, bp, 0, `e-${i}`)));
    expect(outs.every((o) => o.verdict === 'PASS')).toBe(true);
    expect(max).toBe(3);
    expect(gate.judgeCalls).toBe(20);
  });

  it('events carry the §9.13 fields: user_id_hash is SHA-256 of user_id, capability_profile_id and session from the trace', async () => {
    const llm = new ScriptedLlm();
    llm.queue.push('{"quality_score":0.7,"verdict":"PASS_WITH_CAVEATS","reason_codes":["OVERLY_GENERIC"],"fix_mode":"REWRITE_ONLY","missing_requirements":["be specific"]}', PASS);
    const gate = new FinalizationGate({ llm, jobStore: new MemoryGateJobStore() });
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const common = { user_id: 'user-42', session_id: 's-1', capability_profile_id: 'cp-code', intent_id: 'REPO_ORIENTATION' };
    const a = await gate.finalize(fa({ ...common }), agent, bp, t0, 'e-a');
    expect(a.events.final_alignment_judge_result).toMatchObject({
      event: 'final_alignment_judge_result',
      job_id: 'job-1',
      session_id: 's-1',
      user_id_hash: createHash('sha256').update('user-42').digest('hex'),
      intent_id: 'REPO_ORIENTATION',
      capability_profile_id: 'cp-code',
      quality_score: 0.7,
      verdict: 'PASS_WITH_CAVEATS',
      reason_codes: ['OVERLY_GENERIC'],
      fix_mode: 'REWRITE_ONLY',
      attempt_index: 0,
      model_id: 'judge-test',
      trace_id: 'fa-1',
      agent_id: 'agent-1',
      tenant: 'acme',
      intervention: 'nudge',
      ts_ms: t0,
    });
    expect(JSON.stringify(a)).not.toContain('user-42');
    expect(a.events.finalization_outcome).toBeNull();
    expect(a.ledger).toMatchObject({ entry_id: 'rt:gate:e-a', type: 'REPLAN_TRIGGERED', agent_id: 'agent-1', tenant: 'acme', ts_ms: t0, payload: { job_id: 'job-1', action: 'rewrite', fix_mode: 'REWRITE_ONLY' } });
    const b = await gate.finalize(fa({ ...common, trace_id: 'fa-2', artifact_type: 'list' }), agent, bp, t0 + 90_000, 'e-b');
    expect(b.events.finalization_outcome).toMatchObject({ event: 'finalization_outcome', job_id: 'job-1', session_id: 's-1', final_verdict: 'pass', num_retries: 1, time_to_finalize_ms: 90_000, user_feedback: null });
    expect(b.ledger).toBeNull();
  });
});

describe('gate settings, registry skills, user feedback', () => {
  it('enabled: false — no judge call; tier 2 and tier 1 still apply', async () => {
    const off = compileOne('id: off@1.0\nversion: "1.0.0"\ndescription: off\nfinalization_gate:\n  enabled: false\n');
    const llm = new ScriptedLlm();
    const gate = new FinalizationGate({ llm, jobStore: new MemoryGateJobStore() });
    await expect(gate.finalize(fa(), agent, off, 0, 'e1')).resolves.toMatchObject({ verdict: 'PASS', judged_by: 'rules', quality_score: null });
    await expect(gate.finalize(fa({ job_id: 'j2', draft_answer: 'SSN 219-09-9998' }), agent, off, 0, 'e2')).resolves.toMatchObject({ judged_by: 'patterns', action: 'block' });
    expect(llm.requests).toHaveLength(0);
  });

  it('agents.yaml `skills:` are read into the registry (and must be a list of strings)', () => {
    const ok = parseAgentRegistry('agents:\n  - id: a\n    skills: [code-review]\n  - id: b\n', 'agents.yaml');
    expect(ok.registry!.lookup('a').skills).toEqual(['code-review']);
    expect(ok.registry!.lookup('b').skills).toBeUndefined();
    const bad = parseAgentRegistry('agents:\n  - id: a\n    skills: code-review\n', 'agents.yaml');
    expect(bad.errors.map((e) => e.format())).toEqual([expect.stringMatching(/^agents\.yaml:3:13: STEWARD_CONFIG: 'skills' must be a list of strings/)]);
  });

  it('user_feedback re-emits the job\'s finalization_outcome with the feedback', async () => {
    const gate = new FinalizationGate({ jobStore: new MemoryGateJobStore() });
    const fb = (feedback: unknown, job_id = 'job-1'): Trace => ({ trace_id: 'u1', agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'user_feedback', job_id, feedback });
    expect(await gate.userFeedback(fb('up'), agent, 0)).toBeNull(); // the job has not ended
    await gate.finalize(fa(), agent, bp, 0, 'e1');
    await expect(gate.userFeedback(fb('down'), agent, 1)).resolves.toMatchObject({ event: 'finalization_outcome', job_id: 'job-1', user_feedback: 'down', final_verdict: 'pass' });
    await expect(gate.userFeedback(fb('meh'), agent, 1)).rejects.toMatchObject({ code: 'STEWARD_GATE_INPUT' });
  });
});

describe('judge output and payload helpers', () => {
  it('parseJudgeOutput keeps valid optional fields and drops malformed ones', () => {
    const a = parseJudgeOutput(
      JSON.stringify({ quality_score: 0.5, verdict: 'FAIL', reason_codes: ['OVERLY_GENERIC', 'OVERLY_GENERIC'], fix_mode: 'REWRITE_ONLY', missing_requirements: [], evidence_issues: 'x', next_actions: [{ type: 'rewrite', instruction: 'do it', priority: 'high' }, { type: 'dance' }] }),
      new Set(['OVERLY_GENERIC']),
    );
    expect(a).toMatchObject({ reason_codes: ['OVERLY_GENERIC'], evidence_issues: [], next_actions: [{ type: 'rewrite', instruction: 'do it', priority: 'high' }] });
    expect(() => parseJudgeOutput('{"quality_score":0.5,"verdict":"MAYBE","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}', new Set())).toThrow(/schema/);
  });
  it('goal ≤ 3 sentences, summary ≤ 5 lines', () => {
    expect(goalSentences('A b. C d? E f! G h.')).toBe('A b. C d? E f!');
    expect(toolTraceSummary([], 'claim\nwith lines').split('\n')).toHaveLength(5);
    expect(toolTraceSummary([])).toContain('Tools used: none (no tool call recorded for this job)');
  });
});
