/**
 * Tier-2 workflows (gate spec §1, §8; docs/gate.md "Workflows"): ordered tool steps checked over the job's
 * completed steps (kept apart from the bounded list of recent calls, so a step is never forgotten) and recorded
 * tool calls. Only calls that ran count (a blocked call is neither a step nor evidence). At the
 * gate, a required workflow whose steps did not all happen in order fails the answer; at `tool_call` time,
 * a step taken before the steps in front of it is blocked before it runs.
 */
import type { Trace } from '../types.js';
import type { GateHit, GateToolCall, Workflow } from './types.js';

/** How many leading steps of `steps` the ran calls complete, in order (a subsequence match). */
export function workflowProgress(steps: readonly string[], calls: readonly GateToolCall[]): number {
  let k = 0;
  for (const c of calls) {
    if (k >= steps.length) break;
    if (!c.blocked && c.tool === steps[k]) k++;
  }
  return k;
}

/**
 * The job's completed workflow steps, as matched step prefixes (`GateJobState.steps_done`). The subsequence match
 * is greedy, so workflows that agree on their first m steps match those m steps at the same calls: any kept
 * prefix sharing m leading steps with `steps` proves m of them done. Keyed by the steps, not the guardrail id,
 * so a reload that changes a workflow's steps does not inherit another list's progress.
 */
export function storedProgress(steps: readonly string[], done: readonly (readonly string[])[] | undefined): number {
  let best = 0;
  for (const p of done ?? []) {
    let m = 0;
    while (m < p.length && m < steps.length && p[m] === steps[m]) m++;
    if (m > best) best = m;
  }
  return best;
}

/** Where a job stands in `steps`: its kept completed steps, or the kept recent calls (states from before steps_done). */
export function jobProgress(steps: readonly string[], calls: readonly GateToolCall[], done: readonly (readonly string[])[] | undefined): number {
  return Math.max(storedProgress(steps, done), workflowProgress(steps, calls));
}

/**
 * Prefixes kept per job beyond the blueprint's own workflows (3 by default; `blueprints.workflow_limits` may raise
 * that, and every current workflow keeps its prefix): room for lists a reload replaced.
 */
export const MAX_STEPS_DONE = 8;

const isPrefixOf = (p: readonly string[], q: readonly string[]) => p.length <= q.length && p.every((x, i) => x === q[i]);

/**
 * Reducer part: `steps_done` after `call` was recorded (`calls`: the kept calls, `call` last). Each workflow of the
 * blueprint advances on its own; one that `steps_done` does not know yet (a state written before it, a workflow
 * added by a reload) starts from the kept calls. Neither source ever counts a step that did not run, so the
 * result is at most the whole history's progress. Unchanged (same array) when nothing advanced.
 */
export function advanceStepsDone(done: readonly (readonly string[])[] | undefined, workflows: readonly (readonly string[])[], calls: readonly GateToolCall[], call: GateToolCall): string[][] | undefined {
  let out = done as string[][] | undefined;
  for (const steps of workflows) {
    const had = storedProgress(steps, out);
    let k = had;
    if (!call.blocked && k < steps.length && steps[k] === call.tool) k++;
    k = Math.max(k, workflowProgress(steps, calls));
    if (k <= had) continue;
    const q = steps.slice(0, k);
    // The new prefix replaces the kept prefixes it extends.
    out = [...(out ?? []).filter((p) => !isPrefixOf(p, q)), q];
  }
  const bound = Math.max(MAX_STEPS_DONE, workflows.length);
  if (out && out !== done && out.length > bound) {
    // Past the bound the oldest prefixes that no current workflow starts with go first (lists a reload replaced).
    const current = out.filter((p) => workflows.some((st) => isPrefixOf(p, st)));
    const stale = out.filter((p) => !workflows.some((st) => isPrefixOf(p, st)));
    out = [...stale.slice(Math.max(0, stale.length - Math.max(0, bound - current.length))), ...current];
  }
  return out;
}

/**
 * A workflow with `skills:` applies to an agent the registry lists for any of them (`registered`), whatever skill
 * the trace names (D46: agents never choose their own skill); `when` still reads the trace.
 */
function applies(w: Workflow, trace: Trace, registered: readonly string[] | undefined): boolean {
  if (w.skills && !w.skills.some((s) => registered?.includes(s) === true)) return false;
  return w.when(trace);
}

/**
 * At the gate: the required workflows whose steps are not all done, as missing requirements (`done`: the job's
 * steps_done). `workflows`: those the job is held to (skills.ts gateScope), `registered`: the agent's registry skills.
 */
export function missingWorkflowSteps(workflows: readonly Workflow[], calls: readonly GateToolCall[], trace: Trace, registered: readonly string[] | undefined, done?: readonly (readonly string[])[]): GateHit[] {
  const hits: GateHit[] = [];
  for (const w of workflows) {
    if (!w.required || !applies(w, trace, registered)) continue;
    const k = jobProgress(w.steps, calls, done);
    if (k < w.steps.length)
      hits.push({ kind: 'workflow', id: w.id, message: `workflow '${w.id}': step '${w.steps[k]}' was not performed${k > 0 ? ` (after ${w.steps.slice(0, k).join(' → ')})` : ''}; required order: ${w.steps.join(' → ')}` });
  }
  return hits;
}

/**
 * At `tool_call` time: a call to a step whose earlier steps have not all run is out of order — only a workflow's
 * own later steps are blocked, so a skill's workflows apply to every call of an agent the registry lists for it.
 */
export function outOfOrderSteps(workflows: readonly Workflow[], calls: readonly GateToolCall[], tool: string, trace: Trace, registered: readonly string[] | undefined, done?: readonly (readonly string[])[]): GateHit[] {
  const hits: GateHit[] = [];
  for (const w of workflows) {
    if (!applies(w, trace, registered)) continue;
    const k = jobProgress(w.steps, calls, done);
    // Steps already done may repeat; the next step is in order; any later step skips `steps[k]`.
    const later = w.steps.indexOf(tool, k + 1);
    if (later > k && !w.steps.slice(0, k + 1).includes(tool))
      hits.push({ kind: 'workflow', id: w.id, message: `workflow '${w.id}': '${tool}' before '${w.steps[k]}' (required order: ${w.steps.join(' → ')})` });
  }
  return hits;
}
