import { describe, expect, it } from 'vitest';
import { governAcmEvent, MemoryAcmStateStore, type AcmEnv, type BlueprintAnswer } from '../../../../src/engine/acm/index.js';
import type { Trace } from '../../../../src/engine/types.js';
import { DSL } from './helpers.js';

let n = 0;
const tr = (f: Record<string, unknown>): Trace => ({ trace_id: `s${++n}`, agent_id: 'ag', timestamp: '2026-01-01T00:00:00Z', run: { runId: 'r1' }, ...f }) as unknown as Trace;
const ok = (): Promise<BlueprintAnswer> => Promise.resolve({ blueprint: 'bp@1', intervention: 'ok', stage: 'rule' });

describe('governAcmEvent (the stage facade)', () => {
  it('runs a plan, a forbidden branch and a tool call through one store', async () => {
    const store = new MemoryAcmStateStore();
    const env: AcmEnv = { dsl: DSL, planCache: new Map() };
    const o = { env, tenant: 'acme', nowMs: 1000 };
    const packet = await governAcmEvent(store, tr({ hook: 'context.packet', context: { id: 'c', sources: ['kb-snap://1'], facts: {} } }), o, ok);
    expect(packet).toMatchObject({ kind: 'decided', intervention: 'ok', drafts: [{ type: 'POLICY_DECISION' }] });
    expect(store.versions.map((v) => v.version)).toEqual([1]);
    const plan = await governAcmEvent(store, tr({ hook: 'plan', goal: { id: 'G' }, selection: { method: 'policy', chosenPlanId: 'p' }, plans: [{ id: 'p', contextRef: 'c', tasks: [{ id: 'a' }, { id: 'b' }], edges: [{ from: 'a', to: 'b', guard: '$a.go == true' }] }] }), o, ok);
    expect(plan.kind === 'decided' && plan.drafts.map((d) => d.type)).toEqual(['POLICY_DECISION', 'PLAN_SELECTED']);
    // A redelivered plan event is not a re-selection.
    const first = store.runs.get('r1')!.plan!;
    const again = await governAcmEvent(store, { ...tr({ hook: 'plan', goal: first.goal, selection: first.selection, plans: first.plans }), trace_id: first.event_trace_id }, o, ok);
    expect(again).toMatchObject({ kind: 'decided', intervention: 'ok', drafts: [{ type: 'POLICY_DECISION' }] });
    await governAcmEvent(store, tr({ hook: 'task.post', task: { id: 'a' }, output: { go: false } }), o, ok);
    const branch = await governAcmEvent(store, tr({ hook: 'branch', from: 'a', to: 'b' }), o, ok);
    expect(branch).toMatchObject({ kind: 'decided', intervention: 'block', approved: false });
    expect(branch.kind === 'decided' && branch.drafts.map((d) => [d.type, d.payload.allowed ?? d.payload.decision])).toEqual([['POLICY_DECISION', 'deny'], ['BRANCH_TAKEN', false]]);
    const tool = await governAcmEvent(store, tr({ hook: 'tool_call', tool: 'x' }), o, () => Promise.resolve({ blueprint: 'bp@1', intervention: 'flag' }));
    expect(tool).toMatchObject({ kind: 'decided', intervention: 'flag', approved: true });
    expect(store.runs.get('r1')!.events).toBe(5);
    expect(await governAcmEvent(store, { ...tr({ hook: 'tool_call' }), run: undefined } as Trace, o, ok)).toEqual({ kind: 'not_governed' });
  });

  it('rejects invalid input without deciding or saving', async () => {
    const store = new MemoryAcmStateStore();
    let decided = false;
    const r = await governAcmEvent(store, tr({ hook: 'plan', goal: { id: 'G' }, selection: { method: 'policy', chosenPlanId: 'p' }, plans: [{ id: 'p', contextRef: 'nope', tasks: [{ id: 'a' }] }] }), { env: { dsl: DSL }, tenant: 't', nowMs: 1 }, () => {
      decided = true;
      return ok();
    });
    expect(r).toMatchObject({ kind: 'rejected', problems: [{ code: 'STEWARD_ACM_CONTEXT_UNKNOWN', path: '$.plans[0].contextRef' }] });
    expect(decided).toBe(false);
    expect(store.runs.size).toBe(0);
  });
});
