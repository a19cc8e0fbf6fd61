/**
 * Approval messages (contracts C9, docs/approvals.md), JSON keyed by approval id, on two topics so that broker
 * ACLs can tell their writers apart (spec-decisions D35):
 *   acgp.approvals        — written by Steward's principal only:
 *     request  — the tripwire stage, for a tool call a `requires_approval` condition matched (decision escalate);
 *     outcome  — the one result (approved, denied, timed_out), from whichever instance resolved it;
 *   acgp.approval-answers — written by approvers:
 *     answer   — an approver's signed approve/deny (`steward approve|deny`, or any system holding an approver key).
 */
import { StewardError } from '../errors.js';
import type { ApprovalAnswer } from '../engine/approvals/approvers.js';
import type { ApprovalOutcome } from '../engine/approvals/outcome.js';
import type { ApprovalRequest } from '../engine/approvals/policy.js';

export type ApprovalMessage = ({ kind: 'request' } & ApprovalRequest) | ({ kind: 'answer' } & ApprovalAnswer) | ({ kind: 'outcome' } & ApprovalOutcome);

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (msg: string) => new StewardError('STEWARD_APPROVAL_MESSAGE', `acgp.approvals: ${msg}`);
const str = (o: Record<string, unknown>, k: string): string => {
  if (typeof o[k] !== 'string' || o[k] === '') throw bad(`'${k}' must be a non-empty string`);
  return o[k] as string;
};
const int = (o: Record<string, unknown>, k: string): number => {
  if (typeof o[k] !== 'number' || !Number.isSafeInteger(o[k])) throw bad(`'${k}' must be an integer (ms)`);
  return o[k] as number;
};
const decision = (v: unknown, k: string): 'approve' | 'deny' => {
  if (v !== 'approve' && v !== 'deny') throw bad(`'${k}' must be approve or deny`);
  return v;
};
const nullableStr = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export function parseApprovalRequest(o: Record<string, unknown>): ApprovalRequest {
  return {
    approval_id: str(o, 'approval_id'),
    tool: str(o, 'tool'),
    agent_id: str(o, 'agent_id'),
    tenant: str(o, 'tenant'),
    agent_tier: str(o, 'agent_tier'),
    trace_id: typeof o.trace_id === 'string' ? o.trace_id : '',
    event_id: str(o, 'event_id'),
    job_id: nullableStr(o.job_id),
    skill_id: nullableStr(o.skill_id),
    role: nullableStr(o.role),
    default_action: decision(o.default_action, 'default_action'),
    requested_ms: int(o, 'requested_ms'),
    deadline_ms: int(o, 'deadline_ms'),
    args: o.args ?? null,
  };
}

/** Non-retryable STEWARD_APPROVAL_MESSAGE for anything else (the stage dead-letters it). */
export function parseApprovalMessage(value: Buffer | string | null): ApprovalMessage {
  if (value === null) throw bad('empty message');
  let o: unknown;
  try {
    o = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    throw bad('not JSON');
  }
  if (!isObj(o)) throw bad('not a JSON object');
  if (o.kind === 'request') return { kind: 'request', ...parseApprovalRequest(o) };
  if (o.kind === 'answer')
    return {
      kind: 'answer',
      approval_id: str(o, 'approval_id'),
      decision: decision(o.decision, 'decision'),
      approver: str(o, 'approver'),
      ...(typeof o.reason === 'string' && { reason: o.reason }),
      ts_ms: int(o, 'ts_ms'),
      ...(typeof o.signature === 'string' && { signature: o.signature }),
    };
  if (o.kind === 'outcome') {
    if (!isObj(o.request)) throw bad("an outcome needs its 'request'");
    const status = o.status;
    if (status !== 'approved' && status !== 'denied' && status !== 'timed_out') throw bad("'status' must be approved, denied or timed_out");
    const via = o.via;
    if (via !== 'kafka' && via !== 'http' && via !== 'timeout') throw bad("'via' must be kafka, http or timeout");
    return {
      kind: 'outcome',
      approval_id: str(o, 'approval_id'),
      status,
      decision: decision(o.decision, 'decision'),
      approver: nullableStr(o.approver),
      reason: nullableStr(o.reason),
      via,
      decided_ms: int(o, 'decided_ms'),
      request: parseApprovalRequest(o.request),
    };
  }
  throw bad("'kind' must be request, answer or outcome");
}

/** A message of acgp.approval-answers: an answer and nothing else (a request or outcome there is refused). */
export function parseApprovalAnswerMessage(value: Buffer | string | null): { kind: 'answer' } & ApprovalAnswer {
  const m = parseApprovalMessage(value);
  if (m.kind !== 'answer') throw bad(`a '${m.kind}' on the answers topic: only Steward writes requests and outcomes (to acgp.approvals)`);
  return m;
}

export const approvalRequestJson = (r: ApprovalRequest): string => JSON.stringify({ kind: 'request', ...r });
export const approvalAnswerJson = (a: ApprovalAnswer): string => JSON.stringify({ kind: 'answer', ...a });
export const approvalOutcomeJson = (o: ApprovalOutcome): string => JSON.stringify({ kind: 'outcome', ...o });
