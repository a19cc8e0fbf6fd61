/**
 * POLICY_DECISION entries (ACM §11: allow/deny/limits/approval-id) built from the tripwire stage's decision.
 * The payload keeps what an auditor needs to replay the decision, not the whole trace.
 */
import type { LedgerDraft } from '../engine/ledger/types.js';
import type { CheckOutcome, DecisionMessage, RuleCheckOutcome } from './messages.js';

/**
 * The fields of an acgp.decisions message the ledger needs (the message type is the one definition;
 * checks need only their ids and outcome). Event time falls back to `decided_at_ms`.
 */
export type PolicyDecisionInput = Pick<DecisionMessage, 'trace_id' | 'agent_id' | 'blueprint' | 'intervention'> &
  Partial<Pick<DecisionMessage, 'tenant' | 'approved' | 'stage' | 'reasons' | 'event_time_ms' | 'decided_at_ms' | 'engine_version' | 'event_id'>> & {
    tripwires?: Pick<CheckOutcome, 'id' | 'fired'>[];
    rules?: Pick<RuleCheckOutcome, 'id' | 'passed'>[];
  };

/**
 * `pd:<event id>` (trace id + digest of the trace's bytes; the trace id when the decision names no other): a
 * redelivered trace maps to the entry already held, while a reused trace id with other bytes gets its own
 * entry instead of being skipped as a redelivery (spec-decisions D30).
 */
export function policyDecisionEntryId(traceId: string, eventId?: string): string {
  return `pd:${eventId || traceId}`;
}

export function policyDecisionDraft(d: PolicyDecisionInput): LedgerDraft {
  const ts = Math.trunc(Number(d.event_time_ms ?? d.decided_at_ms ?? 0));
  const approved = d.approved ?? ['ok', 'nudge', 'flag'].includes(d.intervention);
  return {
    entry_id: policyDecisionEntryId(d.trace_id, typeof d.event_id === 'string' ? d.event_id : undefined),
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
