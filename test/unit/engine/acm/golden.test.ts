/**
 * Data-driven ACM cases (test/golden/acm): guards (guards.yaml), plan graph validation (plans.yaml)
 * and run-governance decisions (pdp.yaml). See the comments at the top of each file for the format.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkAcmEvent, commitAcmEvent, emptyContextState, recordContextPacket, validatePlanEvent, type AcmEnv, type AcmOptions, type ContextPacket, type ContextState, type RunState } from '../../../../src/engine/acm/index.js';
import { compileGuard, type GuardFacts } from '../../../../src/engine/dsl/index.js';
import { mostSevere, type Intervention, type Trace } from '../../../../src/engine/types.js';
import { DSL } from './helpers.js';

const DIR = join(__dirname, '../../../golden/acm');
const load = (f: string) => parse(readFileSync(join(DIR, f), 'utf8')) as Record<string, any>;

describe('guards.yaml', () => {
  for (const c of load('guards.yaml').cases as any[]) {
    it(c.name, () => {
      const recorded = new Set<string>(c.recorded ?? []);
      const r = compileGuard(c.guard, DSL, { recordedTask: (t) => recorded.has(t) });
      if (c.error) {
        expect(r.guard).toBeUndefined();
        const p = r.problems.find((x) => x.code === c.error.code);
        expect(p, JSON.stringify(r.problems)).toBeDefined();
        if (c.error.offset !== undefined) expect(p!.offset).toBe(c.error.offset);
        return;
      }
      expect(r.problems).toEqual([]);
      for (const ch of c.checks) {
        const facts: GuardFacts = { tasks: ch.facts.tasks ?? {}, contextFacts: ch.facts.contextFacts ?? {}, policy: ch.facts.policy ?? {} };
        expect(r.guard!.evaluate(facts), JSON.stringify(ch.facts)).toBe(ch.expect);
      }
    });
  }
});

function contexts(packet: ContextPacket): ContextState {
  return recordContextPacket(emptyContextState(), packet).state;
}

describe('plans.yaml', () => {
  const doc = load('plans.yaml');
  for (const c of doc.cases as any[]) {
    it(c.name, () => {
      const ev = { goal: { id: 'G-1' }, plans: c.plans, selection: c.selection ?? { method: 'policy', chosenPlanId: c.plans[0].id } };
      const v = validatePlanEvent(ev, { dsl: DSL, contexts: contexts(doc.context) });
      if (c.valid) {
        expect(v.problems).toEqual([]);
        expect(v.plans?.size).toBe(c.plans.length);
        return;
      }
      for (const want of c.problems) {
        const p = v.problems.find((x) => x.code === want.code && x.path === want.path);
        expect(p, `${want.code} at ${want.path} in ${JSON.stringify(v.problems)}`).toBeDefined();
        if (want.offset !== undefined) expect(p!.offset).toBe(want.offset);
      }
      expect(v.problems.length).toBe(c.problems.length);
    });
  }
});

describe('pdp.yaml', () => {
  const doc = load('pdp.yaml');
  for (const c of doc.cases as any[]) {
    it(c.name, () => {
      const env: AcmEnv = { dsl: DSL, options: { ...(doc.options as AcmOptions), ...(c.options ?? {}) }, planCache: new Map() };
      let ctx = contexts(doc.context);
      let run: RunState | undefined;
      let n = 0;
      const play = (fields: Record<string, unknown>, blueprint: Intervention = 'ok') => {
        const trace = { trace_id: `e-${++n}`, agent_id: 'a-1', timestamp: '2026-01-01T00:00:00Z', run: { runId: 'run-1' }, ...fields } as unknown as Trace;
        const check = checkAcmEvent({ run, contexts: ctx }, trace, env);
        expect(check.rejected, JSON.stringify(check.problems)).toBe(false);
        const final = mostSevere(blueprint, check.intervention);
        const res = commitAcmEvent({ run, contexts: ctx }, trace, check, { decision: { intervention: final, approved: ['ok', 'nudge', 'flag'].includes(final) }, nowMs: n * 1000 }, env);
        run = res.run;
        ctx = res.contexts;
        return { check, drafts: res.drafts };
      };
      const first = play({ hook: 'plan', goal: { id: 'G-1' }, plans: doc.plans, selection: doc.selection });
      expect(first.drafts.map((d) => d.type)).toEqual(['PLAN_SELECTED']);
      for (const e of c.events) {
        const f: Record<string, unknown> = { hook: e.hook };
        if (e.task !== undefined && e.hook.startsWith('task.')) f.task = { id: e.task, input: { n: 1 } };
        if (e.plan !== undefined) f.plan = { id: e.plan };
        if (e.agent !== undefined) f.agent_id = e.agent;
        if (e.output !== undefined) f.output = e.output;
        if (e.error !== undefined) f.error = e.error;
        if (e.hook === 'branch') Object.assign(f, { from: e.from, to: e.to });
        if (e.hook === 'approval') {
          f.approval = { checkpoint: e.checkpoint, ...(e.claims ? { approver: e.claims } : {}) };
          f.agent_id = e.approver;
        }
        if (e.hook === 'replan') f.replan = { cause: 'test', chosenPlanId: e.chosenPlanId };
        if (e.hook === 'compensation') f.compensation = { task_id: e.task, reason: 'test' };
        if (e.hook === 'goal.amended') f.amendment = { by: e.by, delta: e.delta };
        const r = play(f, e.blueprint);
        const label = `${e.hook} ${e.task ?? `${e.from ?? ''}->${e.to ?? ''}`}`;
        expect(r.check.intervention, `${label}: ${JSON.stringify(r.check.problems)}`).toBe(e.expect);
        if (e.code) expect(r.check.violations.map((v) => v.code), label).toContain(e.code);
        else expect(r.check.violations, label).toEqual([]);
        if (e.hook === 'branch') expect(r.drafts.map((d) => [d.type, d.payload.allowed])).toEqual([['BRANCH_TAKEN', e.expect === 'ok']]);
        if (e.entry) expect(r.drafts.map((d) => d.type), label).toContain(e.entry);
      }
    });
  }
});
