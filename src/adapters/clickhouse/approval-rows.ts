/**
 * Rows of the approvals table (migration 9, docs/approvals.md) from acgp.approvals messages (contracts C9):
 * a request is a pending row, an outcome replaces it (later updated_ms); answers leave no row (their effect
 * is the outcome). A message that does not parse throws STEWARD_SINK_RECORD (dead-lettered).
 */
import { parseApprovalMessage } from '../../contracts/approvals.js';
import type { ApprovalRequest } from '../../engine/approvals/policy.js';
import { StewardError } from '../../errors.js';
import type { ApprovalRow } from './tables.js';

const base = (r: ApprovalRequest, now: number) => ({
  approval_id: r.approval_id, agent_id: r.agent_id, tenant: r.tenant, agent_tier: r.agent_tier, tool: r.tool, trace_id: r.trace_id,
  job_id: r.job_id ?? '', skill_id: r.skill_id ?? '', role: r.role ?? '', default_action: r.default_action,
  requested_ms: r.requested_ms, deadline_ms: r.deadline_ms, ingested_at_ms: now,
});

export function approvalRow(value: Buffer | string | null, now: number): ApprovalRow | undefined {
  let m;
  try {
    m = parseApprovalMessage(value);
  } catch (e) {
    throw new StewardError('STEWARD_SINK_RECORD', (e as Error).message, { retryable: false });
  }
  if (m.kind === 'request') return { ...base(m, now), status: 'pending', decision: '', approver: '', via: '', reason: '', decided_ms: 0, updated_ms: m.requested_ms };
  if (m.kind === 'outcome') return { ...base(m.request, now), status: m.status, decision: m.decision, approver: m.approver ?? '', via: m.via, reason: m.reason ?? '', decided_ms: m.decided_ms, updated_ms: m.decided_ms };
  return undefined;
}
