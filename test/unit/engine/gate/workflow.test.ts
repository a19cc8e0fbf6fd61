import { describe, expect, it } from 'vitest';
import { checkToolCallPure, emptyJobState, missingWorkflowSteps, outOfOrderSteps, recordAttempt, recordToolCall, workflowProgress, type GateToolCall, type Workflow } from '../../../../src/engine/gate/index.js';
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
    expect(missingWorkflowSteps([wf(['a', 'b', 'c'])], [call('a')], trace, null)).toEqual([expect.objectContaining({ kind: 'workflow', message: expect.stringMatching(/step 'b' was not performed \(after a\)/) })]);
    expect(missingWorkflowSteps([wf(['a', 'b'], false)], [], trace, null)).toEqual([]);
    expect(missingWorkflowSteps([wf(['a', 'b'])], [call('a'), call('b')], trace, null)).toEqual([]);
  });
  it('at tool_call time: a later step before the earlier ones is out of order; repeats and the next step are fine', () => {
    const w = [wf(['verify', 'access', 'refund'])];
    expect(outOfOrderSteps(w, [], 'access', trace, null)).toHaveLength(1);
    expect(outOfOrderSteps(w, [], 'verify', trace, null)).toEqual([]);
    expect(outOfOrderSteps(w, [call('verify')], 'access', trace, null)).toEqual([]);
    expect(outOfOrderSteps(w, [call('verify')], 'refund', trace, null)).toHaveLength(1);
    expect(outOfOrderSteps(w, [call('verify'), call('access')], 'verify', trace, null)).toEqual([]);
    expect(outOfOrderSteps(w, [], 'unrelated', trace, null)).toEqual([]);
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
    // a tool call without job_id is not part of any job: no workflow, no rewrite-only state
    expect(checkToolCallPure({ ...trace, job_id: undefined, tool: 'access' }, agent, bp, 2, undefined).intervention).toBe('ok');
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
