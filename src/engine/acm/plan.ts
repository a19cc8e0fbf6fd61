/**
 * Plan events (ACM §12, §13, §15): one or more plans over a context, each a DAG of tasks with guarded
 * or typed error edges and join nodes, and the selection. Validation finds every problem at once, each
 * with its JSON path (and FILE:LINE:COL when the event came from a file); guards are compiled once here.
 */
import type { SourcePosition } from '../../errors.js';
import { compileGuard, type CompiledGuard, type DslCompileOptions } from '../dsl/index.js';
import { contentAddress } from './canonical.js';
import { bindContext, type ContextState, type ContextVersion } from './context.js';
import { ancestorsOf, findCycle, predecessors } from './graph.js';
import { jsonPath, type AcmCode, type AcmProblem } from './problems.js';
import { schemaProblems } from './validate.js';

export interface PlanTask {
  id: string;
  capability?: string;
  description?: string;
  join?: string[];
  checkpoint?: boolean;
  approvers?: string[];
  verificationRefs?: string[];
  spec?: Record<string, unknown>;
}

export interface PlanEdge {
  from: string;
  to: string;
  guard?: string;
  on_error?: string;
}

export interface Plan {
  id: string;
  contextRef: string;
  rationale?: string;
  capabilityMapVersion?: string;
  tasks: PlanTask[];
  edges?: PlanEdge[];
}

export interface PlanSelection {
  method: 'human' | 'policy' | 'llm';
  chosenPlanId: string;
  rationale?: string;
  selector?: string;
}

/** The ACM fields of a `plan` trace. */
export interface PlanEvent {
  goal: { id: string; [k: string]: unknown };
  plans: Plan[];
  selection: PlanSelection;
  planner?: Record<string, unknown>;
}

export interface CompiledEdge {
  index: number;
  from: string;
  to: string;
  /** `from->to`: what a `branch` event names. */
  key: string;
  guard?: CompiledGuard;
  onError?: string;
}

export interface CompiledPlan {
  plan: Plan;
  /** Content address of the plan (its graph as sent). */
  digest: string;
  tasks: Map<string, PlanTask>;
  out: Map<string, CompiledEdge[]>;
  in: Map<string, CompiledEdge[]>;
  edges: Map<string, CompiledEdge>;
}

/** Where problems point when the plan came from a file (a SourceDoc from blueprint/source.ts fits). */
export interface PositionLookup {
  pos(path: readonly (string | number)[]): SourcePosition;
  posInScalar(path: readonly (string | number)[], offset: number): SourcePosition;
}

export interface PlanValidation {
  /** Every plan of the event, compiled, when there is no problem. */
  plans?: Map<string, CompiledPlan>;
  /** Bound context version per plan id (newest version of its contextRef). */
  contexts: Map<string, ContextVersion>;
  problems: AcmProblem[];
}

type Segs = (string | number)[];

export function edgeKey(from: string, to: string): string {
  return `${from}->${to}`;
}

/** Compiles one plan's graph (no validation beyond what building needs); guards must already be valid. */
export function compilePlan(plan: Plan, dsl: DslCompileOptions): CompiledPlan {
  const tasks = new Map(plan.tasks.map((t) => [t.id, t]));
  const out = new Map<string, CompiledEdge[]>();
  const inn = new Map<string, CompiledEdge[]>();
  const edges = new Map<string, CompiledEdge>();
  (plan.edges ?? []).forEach((e, index) => {
    const ce: CompiledEdge = { index, from: e.from, to: e.to, key: edgeKey(e.from, e.to), ...(e.on_error ? { onError: e.on_error } : {}) };
    if (e.guard !== undefined) ce.guard = compileGuard(e.guard, dsl).guard;
    edges.set(ce.key, ce);
    const o = out.get(e.from);
    if (o) o.push(ce);
    else out.set(e.from, [ce]);
    const i = inn.get(e.to);
    if (i) i.push(ce);
    else inn.set(e.to, [ce]);
  });
  return { plan, digest: contentAddress(plan), tasks, out, in: inn, edges };
}

/** Validates a plan event against the known contexts; compiles every plan when valid. */
export function validatePlanEvent(ev: unknown, o: { dsl: DslCompileOptions; contexts: ContextState; positions?: PositionLookup }): PlanValidation {
  const problems: AcmProblem[] = [];
  const add = (code: AcmCode, segs: Segs, message: string, offset?: number) => {
    const position = o.positions ? (offset !== undefined ? o.positions.posInScalar(segs, offset) : o.positions.pos(segs)) : undefined;
    problems.push({ code, message, path: jsonPath(segs), ...(offset !== undefined ? { offset } : {}), ...(position ? { position } : {}) });
  };
  const contexts = new Map<string, ContextVersion>();
  const schema = schemaProblems('plan-event', ev);
  if (schema.length > 0) {
    for (const p of schema) problems.push(o.positions ? { ...p, position: o.positions.pos(pathSegs(p.path)) } : p);
    return { contexts, problems };
  }
  const event = ev as PlanEvent;
  const planIds = new Set<string>();
  event.plans.forEach((plan, pi) => {
    if (planIds.has(plan.id)) add('STEWARD_ACM_DUPLICATE_ID', ['plans', pi, 'id'], `plan id '${plan.id}' appears twice`);
    planIds.add(plan.id);
    validatePlan(plan, pi, o.dsl, add);
    const bound = bindContext(o.contexts, plan.contextRef);
    if (!bound) add('STEWARD_ACM_CONTEXT_UNKNOWN', ['plans', pi, 'contextRef'], `contextRef '${plan.contextRef}' names no context packet Steward has received`);
    else contexts.set(plan.id, bound);
  });
  if (!planIds.has(event.selection.chosenPlanId)) {
    add('STEWARD_ACM_SELECTION', ['selection', 'chosenPlanId'], `chosenPlanId '${event.selection.chosenPlanId}' is not one of the plans (${[...planIds].join(', ')})`);
  }
  if (problems.length > 0) return { contexts, problems };
  return { plans: new Map(event.plans.map((p) => [p.id, compilePlan(p, o.dsl)])), contexts, problems };
}

function validatePlan(plan: Plan, pi: number, dsl: DslCompileOptions, add: (code: AcmCode, segs: Segs, message: string, offset?: number) => void): void {
  const ids = new Set<string>();
  plan.tasks.forEach((t, ti) => {
    if (ids.has(t.id)) add('STEWARD_ACM_DUPLICATE_ID', ['plans', pi, 'tasks', ti, 'id'], `task id '${t.id}' appears twice in plan ${plan.id}`);
    ids.add(t.id);
  });
  const edges = plan.edges ?? [];
  const seen = new Set<string>();
  const graphEdges: { from: string; to: string; index: number }[] = [];
  edges.forEach((e, ei) => {
    let ok = true;
    for (const end of ['from', 'to'] as const) {
      if (!ids.has(e[end])) {
        add('STEWARD_ACM_EDGE_TASK', ['plans', pi, 'edges', ei, end], `edge ${end} '${e[end]}' is not a task of plan ${plan.id}`);
        ok = false;
      }
    }
    const key = edgeKey(e.from, e.to);
    if (seen.has(key)) add('STEWARD_ACM_DUPLICATE_ID', ['plans', pi, 'edges', ei], `a second edge ${e.from} → ${e.to} (a branch event could not say which one it took)`);
    seen.add(key);
    if (ok) graphEdges.push({ from: e.from, to: e.to, index: ei });
  });
  plan.tasks.forEach((t, ti) => {
    (t.join ?? []).forEach((p, k) => {
      if (!ids.has(p)) add('STEWARD_ACM_JOIN_PREDECESSOR', ['plans', pi, 'tasks', ti, 'join', k], `join ${t.id} waits for '${p}', which is not a task of plan ${plan.id}`);
      else if (!seen.has(edgeKey(p, t.id))) add('STEWARD_ACM_JOIN_PREDECESSOR', ['plans', pi, 'tasks', ti, 'join', k], `join ${t.id} waits for '${p}', but no edge ${p} → ${t.id} exists`);
    });
  });
  const cycle = findCycle([...ids], graphEdges);
  if (cycle) {
    add('STEWARD_ACM_PLAN_CYCLE', ['plans', pi, 'edges', cycle.edgeIndex], `plan ${plan.id} is not a DAG: cycle ${cycle.path.join(' → ')}`);
  }
  const inn = predecessors(graphEdges);
  edges.forEach((e, ei) => {
    if (e.guard === undefined) return;
    // Recorded when the guard runs: the edge's source and everything before it (only knowable on a DAG).
    const before = cycle ? undefined : ancestorsOf(e.from, inn);
    const scope = before ? { recordedTask: (id: string) => id === e.from || before.has(id) } : undefined;
    const r = compileGuard(e.guard, dsl, scope);
    for (const p of r.problems) add(p.code, ['plans', pi, 'edges', ei, 'guard'], p.message, p.offset);
  });
}

function pathSegs(path: string): Segs {
  const out: Segs = [];
  const re = /\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(path)) !== null) out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3]!) as string)));
  return out;
}
