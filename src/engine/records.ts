/**
 * The records of StewardEngine (plain JSON, camelCase): what decide() returns and score() takes, what score()
 * returns, and evaluate()'s triple. The wire formats are src/contracts/; the edge converts.
 */
import type { LedgerDraft } from './ledger/types.js';
import type { AclTier, Intervention, MetricOutcome, PvsVerdict, TripwireStageResult, TrustDebtLevel, TrustDebtSnapshot } from './types.js';
import type { ApprovalRequest } from './approvals/policy.js';
import type { RunEventRecord } from './acm/state-store.js';
import type { StateRead } from './acm/pdp.js';

/** What run governance added to a decision (docs/acm.md "In the stream"): the stage publishes `drafts` to the ledger. */
export interface AcmDecision {
  run_id?: string;
  /** The run checks' own intervention (the decision's is the most severe of it and the blueprint's). */
  intervention?: Intervention;
  violations: string[];
  /** POLICY_DECISION (entry id pd:<event id>, with the run) then the event's ACM entries, in chain order. */
  drafts: LedgerDraft[];
  /** An event of a run: its replay records' run-state part (seq, ACM summary, context versions; docs/acm.md "In the stream"). */
  record?: RunEventRecord;
  /** The state the decision read (storage.get values, rate-window counts), in order: the PDP request's `reads`. */
  reads?: StateRead[];
}

export type FinalStage = 'tripwire' | 'rule' | 'ctq';

/** Output of decide(): the tripwire-stage result plus what score() needs, JSON-serialisable. */
export interface DecisionRecord extends TripwireStageResult {
  blueprintVersion: string;
  tenant: string;
  tier: AclTier;
  trustDebt: { debt: number; level: TrustDebtLevel };
  restricted: boolean;
  /** §10.6 elevated_monitoring and above: the scorer evaluates every matched metric with fresh scorer calls. */
  fullScoring?: boolean;
  nowMs: number;
  /** The idempotency id decide() was given (EvalContext.eventId), when it differs from the trace id. */
  eventId?: string;
  /** Run governance of an event of an ACM run (StewardEngineOptions.acm). */
  acm?: AcmDecision;
  /** The agent's arm when the blueprint's name is in a staged rollout (docs/rollout.md). */
  rolloutArm?: 'stable' | 'canary';
  /** The tool call needs a human approval (`tools[].requires_approval`, docs/approvals.md): intervention escalate. */
  approval?: ApprovalRequest;
}

/**
 * What score() accepts: a DecisionRecord, or one whose state-derived fields are missing (the scorer stage
 * converts an acgp.scoring message of the earlier form into this); score() fills them from the agent's state.
 */
export type ScoreDecisionInput = Omit<DecisionRecord, StateDerived> & Partial<Pick<DecisionRecord, StateDerived>>;
type StateDerived = 'blueprintVersion' | 'tenant' | 'tier' | 'trustDebt' | 'restricted' | 'fullScoring' | 'nowMs';

export function isComplete(d: ScoreDecisionInput): d is DecisionRecord {
  return (
    typeof d.restricted === 'boolean' &&
    typeof d.fullScoring === 'boolean' &&
    !!d.trustDebt &&
    typeof d.trustDebt.debt === 'number' &&
    typeof d.trustDebt.level === 'string' &&
    typeof d.blueprintVersion === 'string' &&
    typeof d.tenant === 'string' &&
    typeof d.tier === 'string' &&
    typeof d.nowMs === 'number'
  );
}

export interface ScoreRecord {
  traceId: string;
  agentId: string;
  tenant: string;
  blueprint: string;
  intervention: Intervention;
  approved: boolean;
  stage: FinalStage;
  /** Trust-debt weighting: severity of the tripwire behind the final intervention (undefined = standard). */
  severity?: string;
  ctq: number | null;
  risk: number | null;
  confidence: number;
  metrics: MetricOutcome[];
  verdict: PvsVerdict;
  latencyMs: number;
  /** The agent's trust debt as the decision saw it (§10.6 threshold actions are taken from its level). */
  trustDebt: { debt: number; level: TrustDebtLevel };
  /** True when the trace was scored fully (elevated_monitoring and above; docs/spec-decisions.md §10.6). */
  fullScoring: boolean;
  /** The final intervention was forced by an unavailable dependency: it moves no trust debt (spec-decisions D20). */
  degraded?: boolean;
}

export interface EvalRecord {
  decision: DecisionRecord;
  score: ScoreRecord;
  trustDebt: TrustDebtSnapshot;
}
