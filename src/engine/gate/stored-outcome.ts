/**
 * A decided outcome as the job state keeps it (docs/gate.md "Job state"): every field of the GateOutcome that
 * the state or the attempt does not already hold, and the event facts taken from the trace, but not the two
 * §9.13 events and the ledger draft, which are functions of those (events.ts) and were most of the bytes the
 * gate wrote per answer (docs/pipeline.md "Gate stage"). A fresh decision and a redelivery both go through
 * expandOutcome, so a redelivered answer is the first answer field for field (spec-decisions D21).
 */
import type { GateAction, GateVerdict } from './codes.js';
import { ENDS_JOB, judgeResultEvent, outcomeEvent, replanLedgerDraft } from './events.js';
import type { DefaultedOutcomeField, EventFacts, FinalizationOutcomeEvent, GateAttempt, GateJobState, GateOutcome, PackedOutcome, StoredOutcome, SupersededEnding } from './types.js';

/** Where the outcome's ids come from: the job state (or the key it was made from). */
export interface OutcomeIds {
  job_id: string;
  agent_id: string;
  tenant: string;
}

/** What expandOutcome takes from the attempt: the event, its time, and the decision it recorded. */
export interface AttemptHead {
  event_id: string;
  ts_ms: number;
  action: GateAction;
  verdict: GateVerdict | null;
}

/** The whole outcome, in the field order finalize has always returned (the stage's records are its JSON). */
export function expandOutcome(ids: OutcomeIds, a: AttemptHead, s: StoredOutcome, redelivered: boolean): GateOutcome {
  const core: Omit<GateOutcome, 'events' | 'ledger'> = {
    verdict: a.verdict,
    quality_score: s.quality_score,
    reason_codes: s.reason_codes,
    fix_mode: s.fix_mode,
    attempt_index: s.attempt_index,
    action: a.action,
    judged_by: s.judged_by,
    missing_requirements: s.missing_requirements,
    directive: s.directive,
    intervention: s.intervention,
    degraded: s.degraded,
    job_id: ids.job_id,
    trace_id: s.trace_id,
    event_id: a.event_id,
    agent_id: ids.agent_id,
    tenant: ids.tenant,
    blueprint: s.blueprint,
    skill_id: s.skill_id,
    hits: s.hits,
    dropped_reason_codes: s.dropped_reason_codes,
    evidence_issues: s.evidence_issues,
    next_actions: s.next_actions,
    anti_loop: s.anti_loop,
    judge_error: s.judge_error,
    redelivered,
    trust_debt: s.trust_debt,
  };
  return {
    ...core,
    events: {
      final_alignment_judge_result: judgeResultEvent(core, s.facts, a.ts_ms),
      finalization_outcome: outcomeEvent(core, s.facts, a.ts_ms, s.job_start_ms),
    },
    ledger: replanLedgerDraft(core, a.ts_ms),
  };
}

/**
 * Fields of a stored outcome that most decisions leave at their default: packStored leaves them out of the job
 * state (~250 of ~1 070 bytes for a passing answer) and unpackStored puts them back, so the outcome expanded
 * from a packed attempt is the one expanded from the whole (a redelivery stays byte-identical). States written
 * before packing hold every field: unpacking them changes nothing.
 */
const OUTCOME_DEFAULTS = {
  reason_codes: [],
  fix_mode: null,
  missing_requirements: [],
  directive: null,
  degraded: false,
  skill_id: null,
  hits: [],
  dropped_reason_codes: [],
  evidence_issues: [],
  next_actions: [],
  anti_loop: null,
  judge_error: null,
} as const satisfies Record<DefaultedOutcomeField, unknown>;
const FACT_DEFAULTS = { session_id: null, intent_id: null, user_id_hash: null, capability_profile_id: null, model_id: null, token_cost: null } as const satisfies Partial<EventFacts>;

/** The outcome as the job state keeps it: default-valued fields left out (written out: it runs once per answer). */
export function packStored(s: StoredOutcome): PackedOutcome {
  const p: Record<string, unknown> = {};
  for (const k in s) {
    const v = (s as unknown as Record<string, unknown>)[k];
    const d = (OUTCOME_DEFAULTS as Record<string, unknown>)[k];
    if (d === undefined || !(v === d || (Array.isArray(d) && Array.isArray(v) && v.length === 0))) p[k] = v;
  }
  const f = s.facts;
  const facts: Record<string, unknown> = {};
  for (const k in f) {
    const v = (f as unknown as Record<string, unknown>)[k];
    if (!(v === null && Object.hasOwn(FACT_DEFAULTS, k))) facts[k] = v;
  }
  p.facts = facts;
  return p as PackedOutcome;
}

/** The whole stored outcome from a packed (or an unpacked, older) one. Fresh arrays: callers may keep them. */
export function unpackStored(p: PackedOutcome): StoredOutcome {
  const f = p.facts;
  return {
    ...p,
    reason_codes: p.reason_codes ?? [],
    fix_mode: p.fix_mode ?? null,
    missing_requirements: p.missing_requirements ?? [],
    directive: p.directive ?? null,
    degraded: p.degraded ?? false,
    skill_id: p.skill_id ?? null,
    hits: p.hits ?? [],
    dropped_reason_codes: p.dropped_reason_codes ?? [],
    evidence_issues: p.evidence_issues ?? [],
    next_actions: p.next_actions ?? [],
    anti_loop: p.anti_loop ?? null,
    judge_error: p.judge_error ?? null,
    facts: {
      session_id: f.session_id ?? null,
      intent_id: f.intent_id ?? null,
      user_id_hash: f.user_id_hash ?? null,
      capability_profile_id: f.capability_profile_id ?? null,
      model_id: f.model_id ?? null,
      token_cost: f.token_cost ?? null,
      latency_ms: f.latency_ms,
    },
  };
}

/** A recorded attempt's outcome (compact, or whole as states written before the compact form hold it). */
export function outcomeOfAttempt(ids: OutcomeIds, a: GateAttempt, redelivered: boolean): GateOutcome | undefined {
  if (a.o) return expandOutcome(ids, a, unpackStored(a.o), redelivered);
  return a.outcome ? { ...a.outcome, redelivered } : undefined;
}

/** The finalization_outcome of the job's latest attempt that ended it (user_feedback), or null. */
export function lastEndedOutcome(ids: OutcomeIds, attempts: readonly GateAttempt[]): FinalizationOutcomeEvent | null {
  for (let i = attempts.length - 1; i >= 0; i--) {
    const a = attempts[i]!;
    // Only an ending action has an outcome event: no need to rebuild the others.
    if (a.o && !ENDS_JOB.has(a.action)) continue;
    const ended = outcomeOfAttempt(ids, a, false)?.events.finalization_outcome;
    if (ended) return ended;
  }
  return null;
}

/** D45: when `action` ends a job that had ended before (`state` as the decision read it), that earlier ending. */
export function supersededEnding(ids: OutcomeIds, state: GateJobState | undefined, action: GateAction): SupersededEnding | undefined {
  if (!ENDS_JOB.has(action) || !state || state.attempts.length === 0) return undefined;
  const prev = lastEndedOutcome(ids, state.attempts);
  return prev ? { intent_id: prev.intent_id, final_verdict: prev.final_verdict, action: prev.action, num_retries: prev.num_retries } : undefined;
}
