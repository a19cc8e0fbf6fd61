/**
 * The pre-tool gate for a `tool_call` as a pure function of its job's state (docs/gate.md "Tool calls"): tier 1
 * by the registry's skills (D44), workflow order (D46; a job-less call against an empty history, D45) and the
 * rewrite-only state of its job or, job-less, of the agent's jobs (D45). FinalizationGate.checkToolCall reads the
 * state; a stage holding the state itself calls this directly.
 */
import type { AgentInfo, CompiledBlueprint, Trace } from '../types.js';
import { EMPTY_GATE } from './config.js';
import { scanToolCall, tier1Scope } from './scan.js';
import { DEFAULT_GATE_RUNTIME_LIMITS, type GateJobState, type GateRuntimeLimits, type ToolCallCheck } from './types.js';
import { outOfOrderSteps } from './workflow.js';

export interface ToolCallCheckOptions {
  /** The agent's trust debt, for tier-1 conditions that read `trust_debt` (0 when not given). */
  trustDebt?: number;
  eventId?: string;
  /** Job-less calls: the agent's jobs in rewrite-only state (FinalizationGate reads them from its index). */
  rewriteOnlyJobs?: readonly string[];
}

/** A trace field the agent fills in, as a non-blank string or null (job_id, intent_id, …). */
export const optStr = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

/** The pre-tool gate as a pure function of the job's state (for a stage that holds the state itself). */
export function checkToolCallPure(trace: Trace, agent: AgentInfo, blueprint: CompiledBlueprint, nowMs: number, state: GateJobState | undefined, limits: GateRuntimeLimits = DEFAULT_GATE_RUNTIME_LIMITS, opts: ToolCallCheckOptions = {}): ToolCallCheck {
  const gate = blueprint.gate ?? EMPTY_GATE;
  const jobId = optStr(trace.job_id);
  // Tier 1 (D44) and the workflows below (D46) by the registry's skills, whatever skill_id the call names.
  const hits = scanToolCall({ trace, agent, nowMs, trustDebt: opts.trustDebt, eventId: opts.eventId }, tier1Scope(gate, agent.skills), limits);
  // D45: without job_id the call belongs to no job, so the agent's rewrite-only jobs (opts.rewriteOnlyJobs) hold it.
  const others = jobId ? [] : (opts.rewriteOnlyJobs ?? []);
  const rewriteOnly = state?.rewrite_only === true || others.length > 0;
  if (state?.rewrite_only === true) hits.push({ kind: 'rewrite_only', id: 'rewrite_only', message: `job '${jobId}' is in rewrite-only state (gate spec §9.7): no tool calls until its next final answer` });
  else if (others.length > 0) hits.push({ kind: 'rewrite_only', id: 'rewrite_only', message: `a tool call without job_id while job(s) ${others.map((j) => `'${j}'`).join(', ')} of the agent are in rewrite-only state (gate spec §9.7): none until their next final answer` });
  // D45: a call without job_id has no history, so a workflow step taken without its earlier steps is out of order.
  if (typeof trace.tool === 'string') hits.push(...outOfOrderSteps(gate.workflows, state?.tool_calls ?? [], trace.tool, trace, agent.skills, state?.steps_done));
  return { intervention: hits.length ? 'block' : 'ok', hits, rewrite_only: rewriteOnly, job_id: jobId };
}
