/**
 * POLICY_DECISION entries (ACM §11: allow/deny/limits/approval-id) built from the tripwire stage's decision.
 * The payload keeps what an auditor needs to replay the decision, not the whole trace.
 */
import type { LedgerDraft } from './types.js';

/** The fields of a decision record (Kafka `acgp.decisions` message) the ledger needs. */
export interface PolicyDecisionInput {
  trace_id: string;
  agent_id: string;
  tenant?: string;
  blueprint: string;
  intervention: string;
  approved?: boolean;
  stage?: string;
  reasons?: string[];
  tripwires?: { id: string; fired: boolean }[];
  rules?: { id: string; passed: boolean }[];
  /** Event time of the trace (ms); falls back to `decided_at_ms`. */
  event_time_ms?: number;
  decided_at_ms?: number;
  engine_version?: string;
}

export function policyDecisionEntryId(traceId: string): string {
  return `pd:${traceId}`;
}

export function policyDecisionDraft(d: PolicyDecisionInput): LedgerDraft {
  const ts = Math.trunc(Number(d.event_time_ms ?? d.decided_at_ms ?? 0));
  const approved = d.approved ?? ['ok', 'nudge', 'flag'].includes(d.intervention);
  return {
    entry_id: policyDecisionEntryId(d.trace_id),
    agent_id: d.agent_id,
    tenant: d.tenant ?? '',
    ts_ms: Number.isSafeInteger(ts) && ts >= 0 ? ts : 0,
    type: 'POLICY_DECISION',
    payload: {
      trace_id: d.trace_id,
      blueprint: d.blueprint,
      decision: approved ? 'allow' : 'deny',
      intervention: d.intervention,
      stage: d.stage ?? 'none',
      tripwires_fired: (d.tripwires ?? []).filter((t) => t.fired).map((t) => t.id),
      rules_failed: (d.rules ?? []).filter((r) => !r.passed).map((r) => r.id),
      reasons: d.reasons ?? [],
      ...(d.engine_version ? { engine_version: d.engine_version } : {}),
    },
  };
}
