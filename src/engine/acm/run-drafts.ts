/** Memory-ledger drafts of a committed ACM event (ACM §11), built from the trace and the run state. */
import { branchTakenDraft, compensationAppliedDraft, goalAmendedDraft, planSelectedDraft, replanTriggeredDraft, type AcmEntryBase } from '../ledger/acm-entries.js';
import type { LedgerDraft } from '../ledger/types.js';
import type { Trace } from '../types.js';
import type { CompiledPlan } from './plan.js';
import type { RunState } from './run-state.js';

type Obj = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export interface DraftAt {
  decision: { intervention: string; approved: boolean };
  nowMs: number;
  tenant?: string;
  /** The event's idempotency id: the entries' key (spec-decisions D30). */
  eventId?: string;
}

export function entryBase(trace: Trace, run: RunState, at: DraftAt): AcmEntryBase {
  return { trace_id: trace.trace_id, agent_id: trace.agent_id, tenant: at.tenant, run_id: run.run_id, ts_ms: at.nowMs, ...(at.eventId !== undefined ? { event_id: at.eventId } : {}) };
}

export function planSelected(trace: Trace, at: DraftAt, run: RunState, compiled: CompiledPlan, replaces?: string): LedgerDraft {
  const p = run.plan!;
  return planSelectedDraft({
    ...entryBase(trace, run, at),
    goal_id: String(p.goal.id ?? ''),
    plan_id: p.chosen_plan_id,
    plan_digest: compiled.digest,
    alternatives: p.plans.map((x) => ({ id: x.id, ...(x.rationale !== undefined ? { rationale: x.rationale } : {}) })),
    method: p.selection.method,
    ...(p.selection.rationale !== undefined ? { rationale: p.selection.rationale } : {}),
    ...(p.selection.selector !== undefined ? { selector: p.selection.selector } : {}),
    context: p.context,
    ...(replaces !== undefined ? { replaces } : {}),
  });
}

/** BRANCH_TAKEN at the branch event (decision 22), with the edge as the recorded facts evaluated it. */
export function branchTaken(trace: Trace, at: DraftAt, run: RunState, allowed: boolean): LedgerDraft {
  const from = str(trace.from) ?? '';
  const to = str(trace.to) ?? '';
  const rec = run.edges[`${from}->${to}`];
  return branchTakenDraft({
    ...entryBase(trace, run, at),
    plan_id: run.plan?.chosen_plan_id ?? '',
    from,
    to,
    allowed,
    kind: rec?.kind ?? 'none',
    ...(rec?.guard !== undefined ? { guard: rec.guard } : {}),
    ...(rec?.on_error !== undefined ? { on_error: rec.on_error } : {}),
    ...(rec?.error_type !== undefined ? { error_type: rec.error_type } : {}),
    ...(rec?.facts !== undefined ? { facts: rec.facts } : {}),
    intervention: at.decision.intervention,
  });
}

export function replanTriggered(trace: Trace, at: DraftAt, run: RunState, r: { cause: string; scope?: string; diff?: unknown; from_plan?: string; to_plan?: string }): LedgerDraft {
  return replanTriggeredDraft({ ...entryBase(trace, run, at), ...r });
}

export function compensationApplied(trace: Trace, at: DraftAt, run: RunState, c: Obj): LedgerDraft {
  return compensationAppliedDraft({
    ...entryBase(trace, run, at),
    task_id: str(c.task_id) ?? str(c.taskId) ?? str(c.task) ?? '',
    reason: str(c.reason) ?? '',
    ...(run.plan ? { plan_id: run.plan.chosen_plan_id } : {}),
  });
}

export function goalAmended(trace: Trace, at: DraftAt, run: RunState, a: Obj): LedgerDraft {
  const goal = a.goal && typeof a.goal === 'object' ? (a.goal as Obj) : undefined;
  return goalAmendedDraft({
    ...entryBase(trace, run, at),
    goal_id: str(goal?.id) ?? str(a.goal_id) ?? str(run.plan?.goal.id) ?? '',
    by: str(a.by) ?? str(a.amended_by) ?? trace.agent_id,
    delta: a.delta ?? null,
  });
}
