/**
 * A job's tool call held for a human (docs/approvals.md) and then approved (spec-decisions D46). decide() records
 * a call with its final intervention, so a call escalated for approval is recorded as not run: it is no workflow
 * step and no evidence while it waits, and stays so when it is denied or times out with `deny`. When the approval
 * is granted (an approver's `approve`, or a timeout whose default action is `approve`) the agent runs the tool, so
 * the approvals stage records the call as ran, at the time of the decision — after whatever the job did while it
 * waited, which is when it ran. Pure apart from the job store passed in.
 */
import type { Trace } from '../types.js';
import { recordToolCall } from './job-state.js';
import { toolCallFacts } from './payload.js';
import { DEFAULT_GATE_RUNTIME_LIMITS, type GateJobState, type GateJobStore, type GateRuntimeLimits, type GateToolCall } from './types.js';

/** What the approvals stage knows of a decided approval (an ApprovalOutcome and its request). */
export interface DecidedApproval {
  decision: 'approve' | 'deny';
  decided_ms: number;
  request: { tool: string; agent_id: string; tenant: string; event_id: string; job_id: string | null; args: unknown };
}

/**
 * The held call's own entry stays (blocked: it did not run when decided); the run is a second entry under this
 * event id, so recording the same outcome again (an outcome is published at least once) changes nothing.
 */
export const approvedCallEventId = (eventId: string): string => `${eventId}#approved`;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Records an approved call of a job as ran; nothing for a denial or a call without a job. No blueprint here: the
 * job's `steps_done` catches up from its kept calls at its next recorded call, and both the pre-tool check and
 * tier 2 read the kept calls besides `steps_done` (workflow.ts jobProgress), so the step counts at once.
 */
export async function recordApprovedCall(store: GateJobStore, a: DecidedApproval, limits: Pick<GateRuntimeLimits, 'maxRecordedToolCalls'> = DEFAULT_GATE_RUNTIME_LIMITS): Promise<GateJobState | undefined> {
  const r = a.request;
  if (a.decision !== 'approve' || typeof r.job_id !== 'string' || r.job_id === '') return undefined;
  const key = { tenant: r.tenant, agentId: r.agent_id, jobId: r.job_id };
  const facts = toolCallFacts({ tool: r.tool, args: isObj(r.args) ? r.args : {} } as Trace);
  const call: GateToolCall = { event_id: approvedCallEventId(r.event_id), tool: r.tool, ts_ms: a.decided_ms, blocked: false, ...facts };
  return store.update(key, a.decided_ms, (prev) => recordToolCall(prev, key, call, a.decided_ms, limits.maxRecordedToolCalls));
}
