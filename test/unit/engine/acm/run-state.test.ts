import { describe, expect, it } from 'vitest';
import { AcmGovernor, checkAcmEvent, commitAcmEvent, emptyContextState, recordContextPacket, type AcmEnv, type RunState } from '../../../../src/engine/acm/index.js';
import type { Trace } from '../../../../src/engine/types.js';
import { DSL } from './helpers.js';

const ctx = recordContextPacket(emptyContextState(), { id: 'c', sources: ['kb-snap://1'], facts: { tier: 'gold' } }).state;
const plan = {
  goal: { id: 'G' },
  selection: { method: 'human', chosenPlanId: 'p' },
  plans: [{ id: 'p', contextRef: 'c', tasks: [{ id: 'a' }, { id: 'b' }, { id: 'c' }], edges: [{ from: 'a', to: 'b', guard: "context.facts.tier == 'gold'" }, { from: 'a', to: 'c', guard: '$a.n > 1' }] }],
};
let n = 0;
const tr = (f: Record<string, unknown>): Trace => ({ trace_id: `x${++n}`, agent_id: 'ag', timestamp: '2026-01-01T00:00:00Z', run_id: 'r1', ...f }) as unknown as Trace;
const ok = { decision: { intervention: 'ok' as const, approved: true }, nowMs: 1 };

describe('run-state reducers', () => {
  it('are pure: inputs are not changed, and the state survives a JSON round trip', () => {
    const env: AcmEnv = { dsl: DSL };
    const t1 = tr({ hook: 'plan', ...plan });
    const c1 = commitAcmEvent({ contexts: ctx }, t1, checkAcmEvent({ contexts: ctx }, t1, env), ok, env);
    const s1 = JSON.parse(JSON.stringify(c1.run)) as RunState;
    const frozen = JSON.stringify(s1);
    const t2 = tr({ hook: 'task.post', task: { id: 'a' }, output: { n: 1 } });
    const c2 = commitAcmEvent({ run: s1, contexts: ctx }, t2, checkAcmEvent({ run: s1, contexts: ctx }, t2, env), ok, env);
    expect(JSON.stringify(s1)).toBe(frozen);
    expect(c2.run!.reached).toEqual({ a: true, b: true });
    expect(c2.run!.edges['a->c']).toMatchObject({ allowed: false, kind: 'guard', facts: { $a: { n: 1 } } });
    expect(c2.run!.edges['a->b']).toMatchObject({ allowed: true, facts: { 'context.facts.tier': 'gold' } });
    expect(c2.run!.tasks.a).toMatchObject({ status: 'done', output: { n: 1 }, policy: { allow: true, intervention: 'ok' } });
  });

  it('a rejected event changes nothing and a plan with problems is rejected', () => {
    const env: AcmEnv = { dsl: DSL };
    const bad = tr({ hook: 'plan', ...plan, plans: [{ ...plan.plans[0], edges: [{ from: 'a', to: 'zz' }] }] });
    const check = checkAcmEvent({ contexts: ctx }, bad, env);
    expect(check.rejected).toBe(true);
    expect(check.problems[0]).toMatchObject({ code: 'STEWARD_ACM_EDGE_TASK', path: '$.plans[0].edges[0].to' });
    expect(commitAcmEvent({ contexts: ctx }, bad, check, ok, env)).toMatchObject({ run: undefined, drafts: [] });
  });

  it('a run event without a run id is rejected', () => {
    const env: AcmEnv = { dsl: DSL };
    const t = { trace_id: 'y', agent_id: 'ag', timestamp: '', hook: 'branch', from: 'a', to: 'b' } as unknown as Trace;
    expect(checkAcmEvent({ contexts: ctx }, t, env)).toMatchObject({ rejected: true, problems: [{ code: 'STEWARD_ACM_NO_RUN' }] });
  });

  it('the governor keeps runs apart and lists the context a plan bound', () => {
    const gov = new AcmGovernor({ dsl: DSL });
    const p = tr({ hook: 'context.packet', context: { id: 'c', sources: ['kb-snap://1'], facts: {} } });
    gov.commit(p, gov.check(p, 'acme'), { ...ok, tenant: 'acme' });
    const a = tr({ hook: 'plan', ...plan, run_id: 'r-a' });
    const res = gov.commit(a, gov.check(a, 'acme'), { ...ok, tenant: 'acme' });
    expect(res.contexts.map((v) => `${v.id}@${v.version}`)).toEqual(['c@1']);
    const b = tr({ hook: 'task.pre', task: { id: 'b' }, run_id: 'r-b' });
    expect(gov.check(b, 'acme')!.violations[0]!.violation).toBe('no_plan');
    expect(gov.check(tr({ hook: 'task.pre', task: { id: 'a' }, run_id: 'r-a' }), 'acme')!.violations).toEqual([]);
    // Another tenant does not see the packet.
    expect(gov.check(tr({ hook: 'plan', ...plan, run_id: 'r-c' }), 'other')!.problems[0]!.code).toBe('STEWARD_ACM_CONTEXT_UNKNOWN');
  });
});
