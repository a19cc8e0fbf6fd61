/**
 * The state of one ACM run as plain JSON (the stream keeps it per run id, `steward eval` in memory):
 * the chosen plan with its bound context, what each task recorded, which edges the recorded facts
 * allow, which tasks those edges reach, and the approvals of human checkpoints. Pure helpers only;
 * the reducers are in run-step.ts.
 */
import type { DslCompileOptions } from '../dsl/index.js';
import type { Intervention, Trace } from '../types.js';
import type { ContextVersion } from './context.js';
import { compilePlan, type CompiledPlan, type Plan, type PlanSelection } from './plan.js';
import type { VerificationOutcome, VerificationSheets } from './verification.js';

/** ACM violations and the intervention each is answered with (docs/acm.md). */
export type AcmViolation =
  | 'no_plan'
  | 'outside_plan'
  | 'forbidden_branch'
  | 'unreached_task'
  | 'join_waiting'
  | 'approval_missing'
  | 'unknown_approver'
  | 'replan_refused'
  | 'verification_failed'
  | 'verification_disagrees'
  | 'foreign_agent';

/** Decision 22 (docs/spec-decisions.md): a forbidden branch and its kin are `block` unless configured otherwise. */
export const DEFAULT_VIOLATION_INTERVENTIONS: Record<AcmViolation, Intervention> = {
  no_plan: 'block',
  outside_plan: 'block',
  forbidden_branch: 'block',
  unreached_task: 'block',
  join_waiting: 'block',
  approval_missing: 'block',
  unknown_approver: 'block',
  replan_refused: 'block',
  verification_failed: 'block',
  verification_disagrees: 'flag',
  foreign_agent: 'block',
};

/** Run-governance policy options (until the blueprint schema carries them: docs/acm.md "Options"). */
export interface AcmOptions {
  on?: Partial<Record<AcmViolation, Intervention>>;
  /** Dynamic re-selection (ACM §12): a second plan event or a `replan` switching plans. Default false. */
  allowReplan?: boolean;
  /** The approver registry: ids whose approval events count. Empty/absent = no approver is known. */
  approvers?: readonly string[];
}

export interface AcmEnv {
  dsl: DslCompileOptions;
  sheets?: VerificationSheets;
  options?: AcmOptions;
  /** Compiled plans by digest, so a plan is compiled once, not per event (a Map the caller keeps). */
  planCache?: Map<string, CompiledPlan>;
}

export interface TaskRecord {
  status: 'started' | 'done';
  capability?: string;
  input?: unknown;
  output?: unknown;
  error?: { type: string; message?: string };
  /** The recorded policy response of the task's task.post (what `policy.*` in its edges' guards reads). */
  policy?: { allow: boolean; intervention: Intervention };
  verification?: VerificationOutcome[];
  pre_trace_id?: string;
  post_trace_id?: string;
}

/** An outgoing edge as evaluated when its source completed. */
export interface EdgeRecord {
  from: string;
  to: string;
  allowed: boolean;
  kind: 'guard' | 'on_error' | 'plain';
  guard?: string;
  on_error?: string;
  /** The recorded error type the edge was matched against. */
  error_type?: string;
  /** The recorded facts the guard read (`$t3.risk` → value). */
  facts?: Record<string, unknown>;
}

export interface RunPlan {
  event_trace_id: string;
  goal: Record<string, unknown>;
  /** Every alternative of the plan event (ACM §12), for re-selection. */
  plans: Plan[];
  chosen_plan_id: string;
  /** Content address of the chosen plan; the compiled-plan cache key. */
  digest: string;
  selection: PlanSelection;
  context: { id: string; version: number; digest: string };
  context_facts: Record<string, unknown>;
}

export interface RunState {
  run_id: string;
  agent_id: string;
  plan?: RunPlan;
  tasks: Record<string, TaskRecord>;
  edges: Record<string, EdgeRecord>;
  /** Tasks an allowed edge reaches (roots of the chosen plan included). */
  reached: Record<string, true>;
  approvals: Record<string, { approver: string; approved: boolean; trace_id: string }>;
  branches: { from: string; to: string; allowed: boolean; trace_id: string }[];
  /** How many plan selections (1 + replans). */
  selections: number;
  events: number;
}

export function emptyRunState(runId: string, agentId: string): RunState {
  return { run_id: runId, agent_id: agentId, tasks: {}, edges: {}, reached: {}, approvals: {}, branches: [], selections: 0, events: 0 };
}

export const ACM_HOOKS: ReadonlySet<string> = new Set(['context.packet', 'plan', 'task.pre', 'task.post', 'branch', 'replan', 'compensation', 'goal.amended', 'approval']);

export function isAcmHook(hook: string): boolean {
  return ACM_HOOKS.has(hook);
}

/** `run.runId` or `run_id` (contracts C6, docs/acm.md); undefined when the trace names no run. */
export function runIdOf(trace: Trace): string | undefined {
  const run = trace.run as { runId?: unknown } | undefined;
  const id = run && typeof run === 'object' ? run.runId : undefined;
  if (typeof id === 'string' && id !== '') return id;
  return typeof trace.run_id === 'string' && trace.run_id !== '' ? trace.run_id : undefined;
}

const fallbackCache = new Map<string, CompiledPlan>();

/** The compiled chosen plan of a run (compiled once per digest). */
export function chosenPlan(run: RunState, env: AcmEnv): CompiledPlan | undefined {
  const p = run.plan;
  if (!p) return undefined;
  const cache = env.planCache ?? fallbackCache;
  let c = cache.get(p.digest);
  if (!c) {
    const plan = p.plans.find((x) => x.id === p.chosen_plan_id);
    if (!plan) return undefined;
    c = compilePlan(plan, env.dsl);
    if (cache === fallbackCache && cache.size > 1000) cache.clear();
    cache.set(p.digest, c);
  }
  return c;
}

/** The run's view of a selected plan: roots reached, nothing evaluated yet. */
export function selectPlan(run: RunState, p: RunPlan, compiled: CompiledPlan): RunState {
  const reached: Record<string, true> = {};
  for (const id of compiled.tasks.keys()) if (!compiled.in.has(id)) reached[id] = true;
  return { ...run, plan: p, edges: {}, reached, selections: run.selections + 1 };
}

export function contextRefOf(v: ContextVersion): RunPlan['context'] {
  return { id: v.id, version: v.version, digest: v.digest };
}
