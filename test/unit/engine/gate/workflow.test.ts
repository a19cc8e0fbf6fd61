import { describe, expect, it } from 'vitest';
import { checkToolCallPure, emptyJobState, missingWorkflowSteps, outOfOrderSteps, recordAttempt, recordToolCall, workflowProgress, type GateJobState, type GateToolCall, type Workflow } from '../../../../src/engine/gate/index.js';
import { advanceStepsDone, jobProgress, MAX_STEPS_DONE, storedProgress } from '../../../../src/engine/gate/workflow.js';
import type { AgentInfo, Trace } from '../../../../src/engine/types.js';
import { compileOne } from './helpers.js';

const call = (tool: string, blocked = false, i = 0): GateToolCall => ({ event_id: `e-${tool}-${i}`, tool, ts_ms: i, blocked });
const wf = (steps: string[], required = true): Workflow => ({ tier: 2, id: 'wf', steps, required, when: () => true });
const trace: Trace = { trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', job_id: 'j' };

describe('tier-2 workflows (gate spec §1, §8)', () => {
  it('progress is the ordered prefix of steps that ran; blocked calls do not count', () => {
    expect(workflowProgress(['a', 'b', 'c'], [call('a'), call('x'), call('b')])).toBe(2);
    expect(workflowProgress(['a', 'b', 'c'], [call('b'), call('a')])).toBe(1);
    expect(workflowProgress(['a', 'b'], [call('a', true), call('b')])).toBe(0);
  });
  it('at the gate: a required workflow not completed is a hit naming the next step; optional ones are not', () => {
    expect(missingWorkflowSteps([wf(['a', 'b', 'c'])], [call('a')], trace, undefined)).toEqual([expect.objectContaining({ kind: 'workflow', message: expect.stringMatching(/step 'b' was not performed \(after a\)/) })]);
    expect(missingWorkflowSteps([wf(['a', 'b'], false)], [], trace, undefined)).toEqual([]);
    expect(missingWorkflowSteps([wf(['a', 'b'])], [call('a'), call('b')], trace, undefined)).toEqual([]);
  });
  it('at tool_call time: a later step before the earlier ones is out of order; repeats and the next step are fine', () => {
    const w = [wf(['verify', 'access', 'refund'])];
    expect(outOfOrderSteps(w, [], 'access', trace, undefined)).toHaveLength(1);
    expect(outOfOrderSteps(w, [], 'verify', trace, undefined)).toEqual([]);
    expect(outOfOrderSteps(w, [call('verify')], 'access', trace, undefined)).toEqual([]);
    expect(outOfOrderSteps(w, [call('verify')], 'refund', trace, undefined)).toHaveLength(1);
    expect(outOfOrderSteps(w, [call('verify'), call('access')], 'verify', trace, undefined)).toEqual([]);
    expect(outOfOrderSteps(w, [], 'unrelated', trace, undefined)).toEqual([]);
  });
  it('checkToolCallPure: tier 1, workflow order and rewrite-only state together', () => {
    const bp = compileOne('id: w@1.0\nversion: "1.0.0"\ndescription: w\nguardrails:\n  - id: flow\n    tier: 2\n    workflow: { steps: [verify, access] }\n');
    const agent: AgentInfo = { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true };
    const key = { tenant: 't', agentId: 'a', jobId: 'j' };
    let s = recordToolCall(undefined, key, call('verify'), 1, 64);
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 2, s).intervention).toBe('ok');
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 2, emptyJobState(key, 0)).intervention).toBe('block');
    s = { ...s, rewrite_only: true };
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 2, s)).toMatchObject({ intervention: 'block', rewrite_only: true });
  });
  it('checkToolCallPure without job_id (D45): checked against an empty history and the agent\'s rewrite-only jobs', () => {
    const bp = compileOne('id: w@1.0\nversion: "1.0.0"\ndescription: w\nguardrails:\n  - id: flow\n    tier: 2\n    workflow: { steps: [verify, access] }\n');
    const agent: AgentInfo = { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true };
    const noJob = { ...trace, job_id: undefined };
    // a later step without its earlier steps is out of order (the call has no history); the first step is fine
    expect(checkToolCallPure({ ...noJob, tool: 'access' }, agent, bp, 2, undefined)).toMatchObject({ intervention: 'block', hits: [{ kind: 'workflow', id: 'flow' }] });
    expect(checkToolCallPure({ ...noJob, tool: 'verify' }, agent, bp, 2, undefined).intervention).toBe('ok');
    // another job of the agent in rewrite-only state holds the job-less call; a call of a job is held by its own state only
    expect(checkToolCallPure({ ...noJob, tool: 'search' }, agent, bp, 2, undefined, undefined, { rewriteOnlyJobs: ['j1'] })).toMatchObject({ intervention: 'block', rewrite_only: true, job_id: null, hits: [{ kind: 'rewrite_only', message: expect.stringContaining("'j1'") }] });
    expect(checkToolCallPure({ ...trace, tool: 'search' }, agent, bp, 2, undefined, undefined, { rewriteOnlyJobs: ['j1'] })).toMatchObject({ intervention: 'ok', rewrite_only: false });
    expect(checkToolCallPure({ ...noJob, tool: 'search' }, agent, bp, 2, undefined, undefined, { rewriteOnlyJobs: [] }).intervention).toBe('ok');
  });
});

describe('job-state reducers', () => {
  const key = { tenant: 't', agentId: 'a', jobId: 'j' };
  it('recordToolCall is idempotent per event id, bounded, and counts ran calls as evidence', () => {
    let s = recordToolCall(undefined, key, call('a', false, 1), 1, 3);
    s = recordToolCall(s, key, call('a', false, 1), 2, 3);
    expect(s.tool_calls).toHaveLength(1);
    for (let i = 2; i < 7; i++) s = recordToolCall(s, key, call('b', i % 2 === 0, i), i, 3);
    expect(s.tool_calls.map((c) => c.event_id)).toEqual(['e-b-4', 'e-b-5', 'e-b-6']);
    expect(s.evidence_count).toBe(3); // a, b-3, b-5
  });
  it('recordAttempt counts attempts per event id; rewrite_only follows the last action; asked_user sticks', () => {
    const d = (event_id: string, action: 'rewrite' | 'ask_user' | 'replan') => ({ event_id, ts_ms: 0, abstraction_level: null, artifact_type: null, clarification: null, action, verdict: null, outcome: {} as never });
    let s = recordAttempt(undefined, key, d('e1', 'ask_user'), 0, 16);
    s = recordAttempt(s, key, d('e1', 'replan'), 0, 16);
    expect(s.attempt_count).toBe(1);
    s = recordAttempt(s, key, d('e2', 'rewrite'), 0, 16);
    expect(s).toMatchObject({ attempt_count: 2, rewrite_only: true, asked_user: true });
    s = recordAttempt(s, key, d('e3', 'replan'), 0, 16);
    expect(s).toMatchObject({ attempt_count: 3, rewrite_only: false, asked_user: true });
  });
});

describe('completed workflow steps outlive the kept calls (steps_done)', () => {
  const key = { tenant: 't', agentId: 'a', jobId: 'j' };
  const agent: AgentInfo = { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true };
  const bp = compileOne('id: w@1.0\nversion: "1.0.0"\ndescription: w\nguardrails:\n  - id: flow\n    tier: 2\n    workflow: { steps: [verify, access, refund], required: true }\n');
  const steps = bp.gate!.workflows.map((w) => w.steps);
  const run = (s: GateJobState | undefined, tools: string[], from: number, ws = steps, blocked = false) => {
    for (const [i, t] of tools.entries()) s = recordToolCall(s, key, call(t, blocked, from + i), from + i, 64, ws);
    return s!;
  };
  const filler = (n: number) => Array.from({ length: n }, () => 'search_kb');

  it('a step stays done after 70 later calls: the pre-tool check and the gate both see it', () => {
    let s = run(undefined, ['verify', ...filler(70)], 0);
    expect(s.tool_calls).toHaveLength(64);
    expect(s.tool_calls.some((c) => c.tool === 'verify')).toBe(false);
    expect(s.steps_done).toEqual([['verify']]);
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 100, s).intervention).toBe('ok');
    expect(checkToolCallPure({ ...trace, tool: 'refund' }, agent, bp, 100, s).intervention).toBe('block');
    s = run(s, ['access', ...filler(70), 'refund'], 100);
    expect(s.steps_done).toEqual([['verify', 'access', 'refund']]);
    expect(missingWorkflowSteps(bp.gate!.workflows, s.tool_calls, trace, undefined, s.steps_done)).toEqual([]);
    // Without the kept steps (what the newest calls alone say) the workflow was forgotten.
    expect(missingWorkflowSteps(bp.gate!.workflows, s.tool_calls, trace, undefined)).toHaveLength(1);
  });

  it('blocked calls and out-of-order calls are not steps; a skipped step is still missing after many calls', () => {
    let s = run(undefined, ['verify'], 0, steps, true);
    s = run(s, ['access', ...filler(70)], 1);
    expect(s.steps_done).toBeUndefined();
    expect(missingWorkflowSteps(bp.gate!.workflows, s.tool_calls, trace, undefined, s.steps_done)[0]!.message).toMatch(/step 'verify' was not performed/);
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 100, s).intervention).toBe('block');
  });

  it('a state written before steps_done starts from its kept calls and then keeps them', () => {
    // An earlier build's state: verify is among its kept calls, no steps_done field.
    const old = run(undefined, ['verify', ...filler(10)], 0, []);
    expect(old.steps_done).toBeUndefined();
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 20, old).intervention).toBe('ok');
    const s = run(JSON.parse(JSON.stringify(old)) as GateJobState, filler(70), 20);
    expect(s.steps_done).toEqual([['verify']]);
    expect(checkToolCallPure({ ...trace, tool: 'access' }, agent, bp, 100, s).intervention).toBe('ok');
  });

  it('progress is per step list: shared leading steps count, another list does not inherit the rest', () => {
    const two = [
      ['verify', 'access', 'refund'],
      ['verify', 'notify'],
    ];
    const s = run(undefined, ['verify', 'access', ...filler(70)], 0, two);
    expect(s.steps_done).toEqual([['verify', 'access']]); // ['verify'] of the second list is its prefix
    expect(storedProgress(['verify', 'access', 'refund'], s.steps_done)).toBe(2);
    expect(storedProgress(['verify', 'notify'], s.steps_done)).toBe(1);
    // A reload that changed the workflow: only the leading steps both lists share count.
    expect(storedProgress(['verify', 'audit', 'access'], s.steps_done)).toBe(1);
    expect(storedProgress(['access', 'verify'], s.steps_done)).toBe(0);
    expect(jobProgress(['search_kb', 'search_kb'], s.tool_calls, s.steps_done)).toBe(2);
  });

  it('stays small: absent without workflow progress, one prefix per list, bounded across reloads', () => {
    expect(run(undefined, filler(5), 0).steps_done).toBeUndefined();
    expect(run(undefined, ['verify', 'access'], 0, []).steps_done).toBeUndefined();
    let s = run(undefined, ['verify', 'access', 'refund'], 0);
    expect(s.steps_done).toEqual([['verify', 'access', 'refund']]);
    // Lists a reload replaced: the oldest of those go first past the bound; the current workflows keep theirs.
    for (let r = 0; r < 12; r++) s = run(s, [`old${r}`], 10 + r, [[`old${r}`, 'x']]);
    expect(s.steps_done).toHaveLength(MAX_STEPS_DONE);
    expect(s.steps_done!.at(-1)).toEqual(['old11']);
    expect(s.steps_done).not.toContainEqual(['verify', 'access', 'refund']); // not a workflow of those blueprints
    // Back on the first blueprint: its progress is read again from the kept calls, and kept.
    s = run(s, ['verify'], 30);
    expect(s.steps_done).toHaveLength(MAX_STEPS_DONE);
    expect(s.steps_done).toContainEqual(['verify', 'access', 'refund']);
    // More workflows than the bound (blueprints.workflow_limits raised): every one keeps its progress.
    const many = Array.from({ length: 20 }, (_, i) => [`t${i}`, 'end']);
    s = run(s, many.map((m) => m[0]!), 40, many);
    expect(s.steps_done).toHaveLength(20);
    for (const m of many) expect(storedProgress(m, s.steps_done)).toBe(1);
  });

  it('advanceStepsDone returns the same array when nothing advanced (no rewrite of the state)', () => {
    const done = [['verify']];
    expect(advanceStepsDone(done, steps, [call('verify'), call('x')], call('x'))).toBe(done);
  });
});
