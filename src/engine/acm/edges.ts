/**
 * Guarded branching (ACM §13, decision 22 in docs/spec-decisions.md): which tasks the recorded facts let
 * a run enter, and the evaluation of a task's outgoing edges when its outcome is recorded.
 *   guard edge     allowed when the guard is true over recorded facts (and the task recorded no error)
 *   on_error edge  allowed when the task recorded an error of exactly that type
 *   plain edge     allowed when the task recorded no error
 * A join waits for every declared predecessor's edge into it; a human checkpoint is done when its
 * approval is recorded.
 */
import type { CompiledGuard, GuardFacts } from '../dsl/index.js';
import type { AcmCode } from './problems.js';
import type { CompiledPlan } from './plan.js';
import type { AcmViolation, EdgeRecord, RunState } from './run-state.js';

export interface Unreachable {
  violation: AcmViolation;
  code: AcmCode;
  message: string;
}

/** Why `taskId` may not run now, or undefined when it may. */
export function reachability(run: RunState, plan: CompiledPlan, taskId: string): Unreachable | undefined {
  const task = plan.tasks.get(taskId);
  if (!task) return { violation: 'outside_plan', code: 'STEWARD_ACM_OUTSIDE_PLAN', message: `task ${taskId} is not in the chosen plan ${plan.plan.id}` };
  if (task.join) {
    const waiting = task.join.filter((p) => !run.edges[`${p}->${taskId}`]?.allowed);
    if (waiting.length > 0) return { violation: 'join_waiting', code: 'STEWARD_ACM_JOIN_WAITING', message: `join ${taskId} waits for ${waiting.join(', ')} (no allowed edge from ${waiting.length > 1 ? 'them' : 'it'} recorded yet)` };
    return undefined;
  }
  if (run.reached[taskId]) return undefined;
  const incoming = plan.in.get(taskId) ?? [];
  const pendingCheckpoints = incoming.filter((e) => plan.tasks.get(e.from)?.checkpoint && !run.approvals[e.from]).map((e) => e.from);
  if (pendingCheckpoints.length > 0) {
    return { violation: 'approval_missing', code: 'STEWARD_ACM_APPROVAL_MISSING', message: `task ${taskId} waits for the approval of checkpoint ${pendingCheckpoints.join(', ')}` };
  }
  const why = incoming.map((e) => {
    const r = run.edges[e.key];
    return r ? `${e.from} → ${taskId} not allowed` : `${e.from} not completed`;
  });
  return { violation: 'unreached_task', code: 'STEWARD_ACM_UNREACHED_TASK', message: `no allowed edge reaches task ${taskId}${why.length ? ` (${why.join('; ')})` : ''}` };
}

/** Evaluates the outgoing edges of a task whose outcome was just recorded; allowed targets become reached. */
export function evaluateEdges(run: RunState, plan: CompiledPlan, taskId: string): RunState {
  const rec = run.tasks[taskId];
  const out = plan.out.get(taskId) ?? [];
  if (!rec || out.length === 0) return run;
  const edges = { ...run.edges };
  const reached = { ...run.reached };
  const errorType = rec.error?.type;
  const policy = { allow: rec.policy?.allow === true, intervention: rec.policy?.intervention ?? 'ok', ...(errorType ? { error: errorType } : {}) };
  for (const e of out) {
    let r: EdgeRecord;
    if (e.onError !== undefined) {
      r = { from: e.from, to: e.to, kind: 'on_error', on_error: e.onError, allowed: errorType === e.onError, ...(errorType ? { error_type: errorType } : {}) };
    } else if (e.guard) {
      const facts = guardFacts(run, e.guard.refs, policy);
      // An error routes through error edges only; a guard over a failed task's output is not consulted.
      const allowed = errorType === undefined && evaluate(e.guard, facts);
      r = { from: e.from, to: e.to, kind: 'guard', guard: e.guard.source, allowed, facts: recordedFacts(facts), ...(errorType ? { error_type: errorType } : {}) };
    } else {
      r = { from: e.from, to: e.to, kind: 'plain', allowed: errorType === undefined, ...(errorType ? { error_type: errorType } : {}) };
    }
    edges[e.key] = r;
    if (r.allowed) reached[e.to] = true;
  }
  return { ...run, edges, reached };
}

function evaluate(guard: CompiledGuard, facts: GuardFacts): boolean {
  try {
    return guard.evaluate(facts);
  } catch {
    // A guard that cannot be evaluated does not allow its edge (fail closed).
    return false;
  }
}

/** Only the facts a guard names: what the BRANCH_TAKEN entry records and a replay recomputes. */
function guardFacts(run: RunState, refs: readonly { kind: string; name: string }[], policy: Record<string, unknown>): GuardFacts {
  const tasks: Record<string, unknown> = {};
  const contextFacts: Record<string, unknown> = {};
  let usesPolicy = false;
  for (const r of refs) {
    if (r.kind === 'task') tasks[r.name] = run.tasks[r.name]?.output;
    else if (r.kind === 'context') contextFacts[r.name] = run.plan?.context_facts[r.name];
    else usesPolicy = true;
  }
  return { tasks, contextFacts, policy: usesPolicy ? policy : {} };
}

function recordedFacts(f: GuardFacts): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(f.tasks)) out[`$${k}`] = v ?? null;
  for (const [k, v] of Object.entries(f.contextFacts)) out[`context.facts.${k}`] = v ?? null;
  if (Object.keys(f.policy).length > 0) out.policy = f.policy;
  return out;
}
