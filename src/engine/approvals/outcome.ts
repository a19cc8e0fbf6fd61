/**
 * An approval's one outcome (docs/approvals.md "Outcomes"): approved or denied by an authenticated approver,
 * or timed out with the tool's default action. Each is a POLICY_DECISION ledger entry with a stable id
 * (`ap:<approval id>`), so publishing it twice after a crash appends it once (spec-decisions D26).
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { signTraceBytes } from '../identity.js';
import { keyId } from '../ledger/crypto.js';
import type { LedgerDraft } from '../ledger/types.js';
import type { ApprovalDecision } from './approvers.js';
import type { ApprovalRequest } from './policy.js';

export type ApprovalStatus = 'approved' | 'denied' | 'timed_out';
export type ApprovalVia = 'kafka' | 'http' | 'timeout';

export interface ApprovalOutcome {
  approval_id: string;
  status: ApprovalStatus;
  /** What the agent may do: the approver's decision, or the default action on a timeout. */
  decision: ApprovalDecision;
  approver: string | null;
  reason: string | null;
  via: ApprovalVia;
  decided_ms: number;
  request: ApprovalRequest;
}

export function answeredOutcome(req: ApprovalRequest, a: { decision: ApprovalDecision; approver: string; reason?: string }, via: Exclude<ApprovalVia, 'timeout'>, nowMs: number): ApprovalOutcome {
  return { approval_id: req.approval_id, status: a.decision === 'approve' ? 'approved' : 'denied', decision: a.decision, approver: a.approver, reason: a.reason ?? null, via, decided_ms: nowMs, request: req };
}

export function timeoutOutcome(req: ApprovalRequest, nowMs: number): ApprovalOutcome {
  return { approval_id: req.approval_id, status: 'timed_out', decision: req.default_action, approver: null, reason: `no answer within the approval timeout; default action ${req.default_action}`, via: 'timeout', decided_ms: nowMs, request: req };
}

export function approvalLedgerDraft(o: ApprovalOutcome): LedgerDraft {
  const r = o.request;
  return {
    entry_id: `ap:${o.approval_id}`,
    agent_id: r.agent_id,
    tenant: r.tenant,
    ts_ms: o.decided_ms,
    type: 'POLICY_DECISION',
    payload: {
      source: 'approval',
      approval_id: o.approval_id,
      trace_id: r.trace_id,
      tool: r.tool,
      status: o.status,
      decision: o.decision,
      approver: o.approver,
      via: o.via,
      reason: o.reason,
      role: r.role,
      requested_ms: r.requested_ms,
      deadline_ms: r.deadline_ms,
    },
  };
}

/**
 * Outcomes are signed by Steward (spec-decisions D35): `x-steward-signature: <key id>:<base64 Ed25519 over the
 * record value>` with Steward's ledger key, the same header and key ids as agents' traces. A client given
 * Steward's public keys acts only on an outcome one of them signed, so an outcome forged onto acgp.approvals
 * (a deployment without the approval-topic ACLs) is passed over.
 */
export function signOutcomeBytes(value: string, privateKeyPem: string): string {
  return signTraceBytes(Buffer.from(value, 'utf8'), privateKeyPem);
}

/** Whether `header` is a signature of `value` by one of `publicKeys` (PEM or KeyObject). */
export function outcomeSignedBy(value: Uint8Array, header: string | undefined, publicKeys: readonly (string | KeyObject)[]): boolean {
  if (!header) return false;
  const colon = header.indexOf(':');
  if (colon <= 0) return false;
  const kid = header.slice(0, colon);
  const sig = Buffer.from(header.slice(colon + 1), 'base64');
  for (const k of publicKeys) {
    const key = typeof k === 'string' ? createPublicKey(k) : k;
    if (keyId(key) !== kid) continue;
    try {
      if (verify(null, value, key, sig)) return true;
    } catch {
      // a malformed signature is no signature
    }
  }
  return false;
}
