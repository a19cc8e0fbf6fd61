/**
 * Tier-2 workflows (gate spec §1, §8; docs/gate.md "Workflows"): ordered tool steps checked over the job's
 * recorded tool calls. Only calls that ran count (a blocked call is neither a step nor evidence). At the
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

function applies(w: Workflow, trace: Trace, skillId: string | null): boolean {
  if (w.skills && (skillId === null || !w.skills.includes(skillId))) return false;
  return w.when(trace);
}

/** At the gate: the required workflows whose steps are not all done, as missing requirements. */
export function missingWorkflowSteps(workflows: readonly Workflow[], calls: readonly GateToolCall[], trace: Trace, skillId: string | null): GateHit[] {
  const hits: GateHit[] = [];
  for (const w of workflows) {
    if (!w.required || !applies(w, trace, skillId)) continue;
    const k = workflowProgress(w.steps, calls);
    if (k < w.steps.length)
      hits.push({ kind: 'workflow', id: w.id, message: `workflow '${w.id}': step '${w.steps[k]}' was not performed${k > 0 ? ` (after ${w.steps.slice(0, k).join(' → ')})` : ''}; required order: ${w.steps.join(' → ')}` });
  }
  return hits;
}

/** At `tool_call` time: a call to a step whose earlier steps have not all run is out of order. */
export function outOfOrderSteps(workflows: readonly Workflow[], calls: readonly GateToolCall[], tool: string, trace: Trace, skillId: string | null): GateHit[] {
  const hits: GateHit[] = [];
  for (const w of workflows) {
    if (!applies(w, trace, skillId)) continue;
    const k = workflowProgress(w.steps, calls);
    // Steps already done may repeat; the next step is in order; any later step skips `steps[k]`.
    const later = w.steps.indexOf(tool, k + 1);
    if (later > k && !w.steps.slice(0, k + 1).includes(tool))
      hits.push({ kind: 'workflow', id: w.id, message: `workflow '${w.id}': '${tool}' before '${w.steps[k]}' (required order: ${w.steps.join(' → ')})` });
  }
  return hits;
}
