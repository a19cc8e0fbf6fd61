/**
 * JSON shapes (snake_case) of what the stages put on Kafka. The sink (ClickHouse) and downstream services
 * read these; dedupe key is `trace_id` for decisions and verdicts and `event_id` for trust-debt events.
 */
import type { Intervention, PvsVerdict, Trace, TrustDebtLevel } from '../engine/types.js';
import type { FinalAlignmentJudgeResultEvent, FinalizationOutcomeEvent, GateTrustDebt } from '../engine/gate/types.js';

/** Why the tripwire stage refused a trace (it went to the DLQ): the decision is then block, approved false. */
export interface RejectedInfo {
  code: string;
  message: string;
}

/** One tripwire's outcome as acgp.decisions carries it (per-check latency left out). */
export interface CheckOutcome {
  id: string;
  fired: boolean;
  decision?: Intervention;
  reason?: string;
  error?: { code: string; message: string };
}

/** One rule check's outcome as acgp.decisions carries it. */
export interface RuleCheckOutcome {
  id: string;
  passed: boolean;
  decision?: Intervention;
  reason?: string;
  error?: { code: string; message: string };
}

/** acgp.decisions — the tripwire stage's decision (and the synchronous answer); dedupe key trace_id. */
export interface DecisionMessage {
  trace_id: string;
  agent_id: string;
  tenant: string;
  blueprint: string;
  intervention: Intervention;
  approved: boolean;
  /** Where the intervention came from at this stage. */
  stage: 'tripwire' | 'rule' | 'none';
  halted: boolean;
  reasons: string[];
  severity?: string;
  tripwires: CheckOutcome[];
  rules: RuleCheckOutcome[];
  latency_ms: number;
  /** Event time of the trace (ms) and when the decision was made (ms). */
  event_time_ms: number;
  decided_at_ms: number;
  hook: string;
  tool?: string;
  session_id?: string;
  engine_version?: string;
  /** Idempotency id of the trace's trust-debt movement when it is not the trace_id (see EvalContext.eventId). */
  event_id?: string;
  /** Set on the fail-closed reply to a waiting client when the tripwire stage refused the trace (DLQ). */
  rejected?: RejectedInfo;
  /** The intervention was forced by an unavailable dependency (spec-decisions D20): no trust debt. */
  degraded?: boolean;
  /** True when the client timed out and applied the governance fallback (spec-decisions D5); never set by Steward itself. */
  fallback?: boolean;
  fallback_reason?: string;
  /** The selected blueprint's version and the agent's rollout arm (contracts C8, docs/rollout.md). */
  blueprint_version?: string;
  rollout_arm?: 'stable' | 'canary';
  /** An escalation that waits for a human approval (contracts C9, docs/approvals.md): its id and deadline. */
  approval_id?: string;
  approval_deadline_ms?: number;
  [k: string]: unknown;
}

/** Longest `rejected.message` kept (the rest is cut with an ellipsis). */
export const MAX_REJECT_MESSAGE = 1000;

const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A decision's reason with each lone UTF-16 surrogate as U+FFFD, as Avro writes it (contracts C13: an Avro decision
 * reads back as its JSON form). Reasons may quote trace text (an evaluation error naming an argument, a gate hit, a
 * rejected trace's message cut at a length), which may hold one; ids, hook and tool are refused on decode instead.
 */
export function wellFormedReason(s: string): string {
  return s.replace(LONE_SURROGATES, '\uFFFD');
}

/**
 * The fail-closed decision for a refused trace (block, approved false, stage none, `rejected`): the tripwire
 * stage's reply for a dead-lettered trace, and the client's own answer for a trace that never reached it.
 * `where` ends the reason: "by the tripwire stage" or "before reaching the tripwire stage".
 */
export function rejectedDecision(
  ids: { trace_id: string; agent_id: string; hook: string; tool?: unknown },
  err: RejectedInfo,
  times: { event_time_ms: number; decided_at_ms: number },
  where: string,
): DecisionMessage {
  const message = err.message.length > MAX_REJECT_MESSAGE ? err.message.slice(0, MAX_REJECT_MESSAGE) + '…' : err.message;
  return {
    trace_id: ids.trace_id,
    agent_id: ids.agent_id,
    tenant: '',
    blueprint: '',
    intervention: 'block',
    approved: false,
    stage: 'none',
    halted: false,
    reasons: [wellFormedReason(`trace rejected ${where}: ${err.code}: ${message}`)],
    tripwires: [],
    rules: [],
    latency_ms: 0,
    event_time_ms: times.event_time_ms,
    decided_at_ms: times.decided_at_ms,
    hook: ids.hook,
    ...(typeof ids.tool === 'string' ? { tool: ids.tool } : {}),
    rejected: { code: err.code, message },
  };
}

export interface VerdictMessage {
  trace_id: string;
  agent_id: string;
  tenant: string;
  blueprint: string;
  /** Final intervention: most severe of tripwires, rules and CTQ (spec-decisions D1). */
  intervention: Intervention;
  approved: boolean;
  stage: 'tripwire' | 'rule' | 'ctq' | 'none';
  ctq: number | null;
  risk: number | null;
  severity?: string;
  metrics: { name: string; score: number | null; weight: number; confidence: number; scorer: string; status: string }[];
  verdict: PvsVerdict;
  event_time_ms: number;
  scored_at_ms: number;
  /** As DecisionMessage.event_id. */
  event_id?: string;
  /** As DecisionMessage.degraded (an unavailable metric's fallback, or a degraded decision that stood). */
  degraded?: boolean;
  [k: string]: unknown;
}

export interface TrustDebtMessage {
  /** Idempotency id: a review's event id, an audit's own id, or for a trace trace_id#digest (stream). */
  event_id: string;
  /** The trace whose final intervention moved the debt (intervention events only). */
  trace_id?: string;
  tenant: string;
  agent_id: string;
  at_ms: number;
  cause: string;
  before: number;
  after: number;
  level: TrustDebtLevel;
  previous_level: TrustDebtLevel;
  crossings: { threshold: string; direction: 'up' | 'down' }[];
  duplicate: boolean;
}

/** Reply routing copied from the trace's headers so later stages can answer the same client. */
export interface ReplyRoute {
  topic: string;
  partition: number;
  correlation_id: string;
}

/**
 * acgp.scoring: the trace plus its tripwire-stage decision (the scorer never re-runs tripwires). Written as
 * `{trace, event_time_ms, decision_record, reply?}` (src/consumers/scoring-message.ts); `decision` (the whole
 * acgp.decisions message) is what the earlier form carried instead of `event_time_ms`, still read.
 */
export interface ScoringMessage {
  trace: Trace;
  /** Event time (ms) the decision used. */
  event_time_ms?: number;
  /** Earlier form only. */
  decision?: DecisionMessage;
  /** Engine-native decision record (per-check latencies dropped), passed back to StewardEngine.score(). */
  decision_record?: unknown;
  reply?: ReplyRoute;
}

/** acgp.reviews: human review outcomes and remediation decisions feeding trust debt recovery. */
export interface ReviewMessage {
  event_id: string;
  agent_id: string;
  tenant?: string;
  /** `retier_resolved`: a re-tiering review outcome (audit record only, moves no debt). */
  kind: 'review_approved' | 'remediation_granted' | 'audit_credit' | 'retier_resolved';
  /** Optional explicit credit; the blueprint's recovery settings apply otherwise. */
  credit?: number;
  /** ISO-8601 or epoch ms. */
  timestamp: string | number;
  trace_id?: string;
  reviewer?: string;
  /** retier_resolved: the reviewer's decision, note and the queued requests it resolved. */
  decision?: 'keep' | 'retier';
  note?: string;
  requests?: { event_id: string; at_ms: number; debt: number }[];
}

/**
 * acgp.finalize: a `final_answer` (or `user_feedback`) trace the tripwire stage hands the gate stage, in the
 * agent's partition order after the job's tool calls (the tripwire stage records those first).
 */
export interface FinalizeRequestMessage {
  trace: Trace;
  /** Event time (ms) the gate uses (the clamped event time, as for every other decision). */
  event_time_ms: number;
  /** Idempotency id of the trace (trace_id#digest): the gate counts attempts per event id. */
  event_id: string;
  reply?: ReplyRoute;
}

/** The synchronous answer to a `final_answer` (reply kind `gate`): the gate verdict and what to do next. */
export interface GateReplyMessage {
  trace_id: string;
  agent_id: string;
  job_id: string;
  intervention: Intervention;
  approved: boolean;
  verdict: 'PASS' | 'PASS_WITH_CAVEATS' | 'FAIL' | null;
  quality_score: number | null;
  reason_codes: string[];
  fix_mode: 'REWRITE_ONLY' | 'NEEDS_NEW_EVIDENCE' | 'NEEDS_USER_CLARIFICATION' | null;
  attempt_index: number;
  action: 'finalize' | 'rewrite' | 'replan' | 'ask_user' | 'finalize_with_limitations' | 'block';
  judged_by: 'patterns' | 'rules' | 'llm';
  missing_requirements: string[];
  /** The §9.12 replan prompt, filled (rewrite, replan, ask_user, finalize_with_limitations, block). */
  directive: string | null;
  /** Forced by an unavailable dependency (judge timeout or invalid output): docs/spec-decisions.md D20. */
  degraded: boolean;
  event_time_ms: number;
  decided_at_ms: number;
  engine_version?: string;
}

/**
 * acgp.gate: the gate spec's §9.13 events (docs/gate.md). The judge result of each attempt carries the
 * trust-debt movement the trust-debt stage applies (none for a repair loop); the outcome is written when a
 * job ends, and again with `user_feedback` when that arrives (same event_id: the row is replaced).
 */
export type GateEventMessage = (FinalAlignmentJudgeResultEvent & { trust_debt?: GateTrustDebt; blueprint?: string }) | FinalizationOutcomeEvent;
