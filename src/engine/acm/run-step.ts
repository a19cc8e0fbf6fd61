/**
 * The run-governance reducers, in two pure steps per event so the stage can combine them with the
 * blueprint decision (docs/acm.md "Stage contract"):
 *   checkAcmEvent(state, trace, env)                → AcmCheck (violations, verification, or rejected input)
 *   commitAcmEvent(state, trace, check, decision…)  → next state + memory-ledger drafts
 * A task's outgoing edges are evaluated at its task.post, after its policy decision is known (a guard
 * may read policy.allow, decision 22), so an agent cannot escape its plan by not reporting a branch.
 */
import type { LedgerDraft } from '../ledger/types.js';
import { mostSevere, type Intervention, type Trace } from '../types.js';
import { contextPacketProblems, recordContextPacket, type ContextPacket, type ContextState, type ContextVersion } from './context.js';
import { evaluateEdges, reachability } from './edges.js';
import { branchTaken, compensationApplied, goalAmended, planSelected, replanTriggered } from './run-drafts.js';
import { validatePlanEvent, type PlanEvent } from './plan.js';
import type { AcmCode, AcmProblem } from './problems.js';
import { chosenPlan, contextRefOf, DEFAULT_VIOLATION_INTERVENTIONS, emptyRunState, runIdOf, selectPlan, type AcmEnv, type AcmViolation, type RunState, type TaskRecord } from './run-state.js';
import { runVerification, sheetsFor, type VerificationClaim, type VerificationOutcome } from './verification.js';
import { schemaProblems } from './validate.js';

export interface AcmViolationRecord extends AcmProblem {
  violation: AcmViolation;
  intervention: Intervention;
}

export interface AcmCheck {
  hook: string;
  run_id?: string;
  /** The ACM checks' intervention (`ok` when nothing is wrong); combine with the blueprint's (most severe). */
  intervention: Intervention;
  /** Invalid input: the event is refused as a whole (DLQ in the stream) and changes nothing. */
  rejected: boolean;
  problems: AcmProblem[];
  violations: AcmViolationRecord[];
  verification?: VerificationOutcome[];
}

export interface AcmStates {
  run?: RunState;
  contexts: ContextState;
}

export interface AcmCommit {
  run?: RunState;
  contexts: ContextState;
  drafts: LedgerDraft[];
  /** A new context version to store (content-addressed, immutable). */
  context?: ContextVersion;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The ACM payload of an event that nests it (`replan: {...}`) or writes it at the top level. */
export function payloadOf(trace: Trace, key: string): Obj {
  return obj(trace[key]) ?? (trace as Obj);
}

export function taskOf(trace: Trace): { id?: string; capability?: string; input?: unknown } {
  const t = obj(trace.task) ?? {};
  return { id: str(t.id) ?? str(trace.task_id), capability: str(t.capability), input: t.input };
}

export function combineIntervention(blueprint: Intervention, check: AcmCheck): Intervention {
  return mostSevere(blueprint, check.intervention);
}

export function checkAcmEvent(s: AcmStates, trace: Trace, env: AcmEnv): AcmCheck {
  const out: AcmCheck = { hook: trace.hook, run_id: runIdOf(trace), intervention: 'ok', rejected: false, problems: [], violations: [] };
  const reject = (problems: AcmProblem[]) => {
    out.rejected = problems.length > 0;
    out.problems.push(...problems);
  };
  const violate = (violation: AcmViolation, code: AcmCode, path: string, message: string) => {
    const intervention = env.options?.on?.[violation] ?? DEFAULT_VIOLATION_INTERVENTIONS[violation];
    out.violations.push({ violation, intervention, code, path, message });
    out.problems.push({ code, path, message });
    out.intervention = mostSevere(out.intervention, intervention);
  };
  if (trace.hook === 'context.packet') {
    reject(contextPacketProblems(trace.context, '$.context'));
    return out;
  }
  if (!out.run_id) {
    reject([{ code: 'STEWARD_ACM_NO_RUN', path: '$.run.runId', message: `a ${trace.hook} event names its run (run.runId or run_id)` }]);
    return out;
  }
  const run = s.run;
  // A run belongs to the agent that planned it: another agent's events cannot steer it (write outputs,
  // take branches), except approvals and goal amendments from the approver registry.
  const approverEvent = trace.hook === 'approval' || (trace.hook === 'goal.amended' && (env.options?.approvers ?? []).includes(trace.agent_id));
  if (run?.plan && trace.agent_id !== run.agent_id && !approverEvent) {
    violate('foreign_agent', 'STEWARD_ACM_FOREIGN_AGENT', '$.agent_id', `run ${out.run_id} belongs to agent ${run.agent_id}, not ${trace.agent_id}`);
    return out;
  }
  if (trace.hook === 'plan') {
    const v = validatePlanEvent(trace, { dsl: env.dsl, contexts: s.contexts });
    reject(v.problems);
    // The same plan event again is a redelivery, not a re-selection.
    if (!out.rejected && run?.plan && run.plan.event_trace_id !== trace.trace_id && !env.options?.allowReplan) {
      violate('replan_refused', 'STEWARD_ACM_REPLAN_REFUSED', '$.selection', `run ${out.run_id} already selected plan ${run.plan.chosen_plan_id}; re-selection is not allowed by policy`);
    }
    return out;
  }
  if (trace.hook === 'goal.amended') return out;
  const plan = run ? chosenPlan(run, env) : undefined;
  if (!run || !plan) {
    violate('no_plan', 'STEWARD_ACM_NO_PLAN', '$', `run ${out.run_id} has no selected plan (a plan event comes first)`);
    return out;
  }
  switch (trace.hook) {
    case 'task.pre':
    case 'task.post': {
      reject(schemaProblems('task-policy-input', { ...(trace as Obj), task: { ...(obj(trace.task) ?? {}), id: taskOf(trace).id } }));
      if (typeof trace.action === 'string' && trace.action !== trace.hook) reject([{ code: 'STEWARD_ACM_SCHEMA', path: '$.action', message: `action '${trace.action}' differs from the hook '${trace.hook}'` }]);
      if (out.rejected) return out;
      const task = taskOf(trace);
      const planId = str(obj(trace.plan)?.id);
      if (planId !== undefined && planId !== plan.plan.id) {
        violate('outside_plan', 'STEWARD_ACM_OUTSIDE_PLAN', '$.plan.id', `plan ${planId} is not the chosen plan ${plan.plan.id}`);
        return out;
      }
      const r = reachability(run, plan, task.id!);
      if (r) violate(r.violation, r.code, '$.task.id', r.message);
      if (trace.hook === 'task.post' && !r) verify(run, plan, trace, env, out, violate);
      return out;
    }
    case 'branch': {
      const from = str(trace.from);
      const to = str(trace.to);
      if (!from || !to) {
        reject([{ code: 'STEWARD_ACM_SCHEMA', path: from ? '$.to' : '$.from', message: 'a branch event names the edge it took (from, to)' }]);
        return out;
      }
      const edge = plan.edges.get(`${from}->${to}`);
      const rec = run.edges[`${from}->${to}`];
      if (!edge) violate('forbidden_branch', 'STEWARD_ACM_FORBIDDEN_BRANCH', '$', `plan ${plan.plan.id} has no edge ${from} → ${to}`);
      else if (!rec) violate('forbidden_branch', 'STEWARD_ACM_FORBIDDEN_BRANCH', '$', `edge ${from} → ${to}: task ${from} has no recorded outcome yet, so no guard allows it`);
      else if (!rec.allowed) violate('forbidden_branch', 'STEWARD_ACM_FORBIDDEN_BRANCH', '$', `edge ${from} → ${to} is not allowed by the recorded facts (${whyNot(rec)})`);
      return out;
    }
    case 'approval': {
      const a = payloadOf(trace, 'approval');
      const cp = str(a.checkpoint);
      // The approver is who sends the approval (its agent id, authenticated by the transport), never a
      // name in the payload: the governed agent could write any name there.
      const approver = trace.agent_id;
      if (!cp) {
        reject([{ code: 'STEWARD_ACM_SCHEMA', path: '$.approval.checkpoint', message: 'an approval names the checkpoint' }]);
        return out;
      }
      const task = plan.tasks.get(cp);
      if (str(a.approver) !== undefined && a.approver !== approver) violate('unknown_approver', 'STEWARD_ACM_UNKNOWN_APPROVER', '$.approval.approver', `approval for ${cp} names '${String(a.approver)}' but is sent by '${approver}'; an approval counts only from the approver itself`);
      else if (!task?.checkpoint) violate('outside_plan', 'STEWARD_ACM_OUTSIDE_PLAN', '$.approval.checkpoint', `'${cp}' is not a human checkpoint of plan ${plan.plan.id}`);
      else if (!run.reached[cp]) violate('unreached_task', 'STEWARD_ACM_UNREACHED_TASK', '$.approval.checkpoint', `checkpoint ${cp} is not reached by an allowed edge`);
      else if (!knownApprover(approver, task.approvers, env)) violate('unknown_approver', 'STEWARD_ACM_UNKNOWN_APPROVER', '$.approval.approver', `approver '${approver}' is not in the approver registry${task.approvers ? ` or not allowed for ${cp}` : ''}`);
      return out;
    }
    case 'replan': {
      const r = payloadOf(trace, 'replan');
      const to = str(r.chosenPlanId) ?? str(r.to_plan);
      if (to !== undefined && !run.plan!.plans.some((p) => p.id === to)) {
        reject([{ code: 'STEWARD_ACM_SELECTION', path: '$.replan.chosenPlanId', message: `plan '${to}' is not an alternative of the run's plan event` }]);
        return out;
      }
      if (!env.options?.allowReplan) violate('replan_refused', 'STEWARD_ACM_REPLAN_REFUSED', '$.replan', `re-selection is not allowed by policy (run ${out.run_id})`);
      return out;
    }
    case 'compensation': {
      const c = payloadOf(trace, 'compensation');
      const id = str(c.task_id) ?? str(c.taskId) ?? str(c.task);
      if (!id) reject([{ code: 'STEWARD_ACM_SCHEMA', path: '$.compensation.task_id', message: 'a compensation names the task it compensates' }]);
      else if (!plan.tasks.has(id)) violate('outside_plan', 'STEWARD_ACM_OUTSIDE_PLAN', '$.compensation.task_id', `task ${id} is not in plan ${plan.plan.id}`);
      return out;
    }
    default:
      return out;
  }
}

function knownApprover(approver: string, taskApprovers: readonly string[] | undefined, env: AcmEnv): boolean {
  if (!(env.options?.approvers ?? []).includes(approver)) return false;
  return !taskApprovers || taskApprovers.includes(approver);
}

function whyNot(rec: RunState['edges'][string]): string {
  if (rec.kind === 'guard') return `guard ${JSON.stringify(rec.guard)} was false`;
  if (rec.kind === 'on_error') return rec.error_type ? `error edge ${rec.on_error}, recorded error ${rec.error_type}` : `error edge ${rec.on_error}, no error was recorded`;
  return `the task recorded error ${rec.error_type ?? ''}`.trim();
}

function verify(run: RunState, plan: NonNullable<ReturnType<typeof chosenPlan>>, trace: Trace, env: AcmEnv, out: AcmCheck, violate: (v: AcmViolation, c: AcmCode, p: string, m: string) => void): void {
  if (!env.sheets) return;
  const task = taskOf(trace);
  const spec = plan.tasks.get(task.id!);
  const capability = task.capability ?? spec?.capability;
  const sheets = sheetsFor(env.sheets, capability, spec?.verificationRefs);
  if (sheets.length === 0) return;
  const claims = (Array.isArray(trace.verification) ? trace.verification : []).filter((c): c is VerificationClaim => !!obj(c) && typeof (c as Obj).id === 'string' && typeof (c as Obj).passed === 'boolean');
  const facts = { task: obj(trace.task) ?? {}, input: task.input ?? run.tasks[task.id!]?.input, output: trace.output, error: trace.error, contextFacts: run.plan!.context_facts };
  out.verification = sheets.map((s) => runVerification(s, facts, claims));
  const failed = out.verification.flatMap((v) => v.failed);
  const routed = (plan.out.get(task.id!) ?? []).some((e) => e.onError === 'VERIFICATION_FAILED');
  if (failed.length > 0 && !routed) violate('verification_failed', 'STEWARD_ACM_VERIFICATION_FAILED', '$.output', `verification failed: ${failed.join(', ')}`);
  const dis = out.verification.flatMap((v) => v.disagreements);
  if (dis.length > 0) violate('verification_disagrees', 'STEWARD_ACM_VERIFICATION_DISAGREES', '$.verification', `the agent's verification claims differ from Steward's: ${dis.map((d) => `${d.id} (agent ${d.agent}, steward ${d.steward})`).join(', ')}`);
}

export interface CommitInput {
  /** The final decision of the event (blueprint and ACM combined). */
  decision: { intervention: Intervention; approved: boolean };
  nowMs: number;
  tenant?: string;
  /** The event's idempotency id, which keys its ledger entries (spec-decisions D30); the trace id when absent. */
  eventId?: string;
}

/**
 * Applies an event the stage has decided. A rejected event changes nothing; a refused one (not
 * approved) changes nothing either, except that a task.post's outcome is still recorded (it happened;
 * its edges then see policy.allow = false) and a branch is still logged as BRANCH_TAKEN (allowed: false).
 */
export function commitAcmEvent(s: AcmStates, trace: Trace, check: AcmCheck, c: CommitInput, env: AcmEnv): AcmCommit {
  const res: AcmCommit = { run: s.run, contexts: s.contexts, drafts: [] };
  if (check.rejected) return res;
  if (trace.hook === 'context.packet') {
    if (!c.decision.approved) return res;
    const r = recordContextPacket(s.contexts, trace.context as ContextPacket, { trace_id: trace.trace_id, ts_ms: c.nowMs });
    return { ...res, contexts: r.state, ...(r.created ? { context: r.version } : {}) };
  }
  const runId = check.run_id!;
  let run = s.run ?? emptyRunState(runId, trace.agent_id);
  run = { ...run, events: run.events + 1 };
  const violated = check.violations.length > 0;
  const drafts: LedgerDraft[] = [];
  switch (trace.hook) {
    case 'plan': {
      if (!c.decision.approved || violated || run.plan?.event_trace_id === trace.trace_id) break;
      const ev = trace as unknown as PlanEvent;
      const chosen = ev.plans.find((p) => p.id === ev.selection.chosenPlanId)!;
      const v = validatePlanEvent(trace, { dsl: env.dsl, contexts: s.contexts });
      const compiled = v.plans!.get(chosen.id)!;
      env.planCache?.set(compiled.digest, compiled);
      const bound = v.contexts.get(chosen.id)!;
      const prev = run.plan?.chosen_plan_id;
      // The first plan makes its sender the run's owner.
      if (prev === undefined) run = { ...run, agent_id: trace.agent_id };
      run = selectPlan(run, { event_trace_id: trace.trace_id, goal: ev.goal, plans: ev.plans, chosen_plan_id: chosen.id, digest: compiled.digest, selection: ev.selection, context: contextRefOf(bound), context_facts: bound.packet.facts }, compiled);
      if (prev !== undefined) drafts.push(replanTriggered(trace, c, run, { cause: str(trace.cause) ?? 'a new plan event', from_plan: prev, to_plan: chosen.id }));
      drafts.push(planSelected(trace, c, run, compiled, prev));
      break;
    }
    case 'task.pre': {
      if (!c.decision.approved || violated) break;
      const t = taskOf(trace);
      const prev = run.tasks[t.id!];
      run = { ...run, tasks: { ...run.tasks, [t.id!]: { ...prev, status: prev?.status === 'done' ? 'done' : 'started', capability: t.capability, input: t.input, pre_trace_id: trace.trace_id } } };
      break;
    }
    case 'task.post': {
      if (check.violations.some((v) => v.violation !== 'verification_failed' && v.violation !== 'verification_disagrees')) break;
      const t = taskOf(trace);
      const plan = chosenPlan(run, env)!;
      const agentError = obj(trace.error);
      const failed = (check.verification ?? []).some((v) => v.failed.length > 0);
      const routed = failed && (plan.out.get(t.id!) ?? []).some((e) => e.onError === 'VERIFICATION_FAILED');
      const error = agentError && str(agentError.type) ? { type: str(agentError.type)!, ...(str(agentError.message) ? { message: str(agentError.message) } : {}) } : routed ? { type: 'VERIFICATION_FAILED' } : undefined;
      const prev = run.tasks[t.id!];
      const rec: TaskRecord = {
        ...prev,
        status: 'done',
        capability: t.capability ?? prev?.capability,
        input: t.input ?? prev?.input,
        output: trace.output,
        ...(error ? { error } : {}),
        policy: { allow: c.decision.approved, intervention: c.decision.intervention },
        ...(check.verification ? { verification: check.verification } : {}),
        post_trace_id: trace.trace_id,
      };
      run = evaluateEdges({ ...run, tasks: { ...run.tasks, [t.id!]: rec } }, plan, t.id!);
      break;
    }
    case 'approval': {
      if (violated) break;
      const a = payloadOf(trace, 'approval');
      const cp = str(a.checkpoint)!;
      const approved = a.decision === undefined || a.decision === 'approved' || a.decision === true;
      const plan = chosenPlan(run, env)!;
      const rec: TaskRecord = { ...run.tasks[cp], status: 'done', output: { approved, approver: trace.agent_id }, policy: { allow: approved && c.decision.approved, intervention: c.decision.intervention } };
      run = { ...run, approvals: { ...run.approvals, [cp]: { approver: trace.agent_id, approved, trace_id: trace.trace_id } } };
      run = evaluateEdges({ ...run, tasks: { ...run.tasks, [cp]: rec } }, plan, cp);
      break;
    }
    case 'branch': {
      drafts.push(branchTaken(trace, c, run, !violated));
      run = { ...run, branches: [...run.branches, { from: str(trace.from)!, to: str(trace.to)!, allowed: !violated, trace_id: trace.trace_id }] };
      break;
    }
    case 'replan': {
      if (!c.decision.approved || violated) break;
      const r = payloadOf(trace, 'replan');
      const to = str(r.chosenPlanId) ?? str(r.to_plan);
      const from = run.plan!.chosen_plan_id;
      drafts.push(replanTriggered(trace, c, run, { cause: str(r.cause) ?? 'replan', ...(str(r.scope) ? { scope: str(r.scope) } : {}), ...(r.diff !== undefined ? { diff: r.diff } : {}), from_plan: from, ...(to ? { to_plan: to } : {}) }));
      if (to === undefined || to === from) break;
      const plan = run.plan!.plans.find((p) => p.id === to)!;
      const v = validatePlanEvent({ goal: run.plan!.goal, plans: [plan], selection: { method: 'policy', chosenPlanId: to } }, { dsl: env.dsl, contexts: s.contexts });
      if (!v.plans) break;
      const compiled = v.plans.get(to)!;
      env.planCache?.set(compiled.digest, compiled);
      const prev = from;
      const bound = v.contexts.get(to)!;
      const selection = { method: (str(r.method) ?? 'policy') as 'policy', chosenPlanId: to, ...(str(r.rationale) ? { rationale: str(r.rationale) } : {}) };
      run = selectPlan(run, { ...run.plan!, chosen_plan_id: to, digest: compiled.digest, selection, context: contextRefOf(bound), context_facts: bound.packet.facts }, compiled);
      drafts.push(planSelected(trace, c, run, compiled, prev));
      break;
    }
    case 'compensation': {
      if (!c.decision.approved || violated) break;
      drafts.push(compensationApplied(trace, c, run, payloadOf(trace, 'compensation')));
      break;
    }
    case 'goal.amended': {
      if (!c.decision.approved) break;
      drafts.push(goalAmended(trace, c, run, payloadOf(trace, 'amendment')));
      break;
    }
    default:
      break;
  }
  return { run, contexts: s.contexts, drafts };
}
