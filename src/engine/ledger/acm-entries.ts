/**
 * Builders of the ACM §11 memory-ledger entries besides POLICY_DECISION (policy-decision.ts):
 * PLAN_SELECTED, BRANCH_TAKEN, REPLAN_TRIGGERED, COMPENSATION_APPLIED, GOAL_AMENDED, and the POLICY_DECISION
 * of a run's events (the stream's plain decisions keep src/contracts/policy-decision.ts; same entry id
 * and payload fields, plus the run's). Each is a draft the
 * chain orders, hashes and signs like every other entry. Entry ids are keyed by the event id (trace id +
 * digest of the trace's bytes, src/engine/event-id.ts) when one is given: a redelivered event (same bytes)
 * yields the same id and is skipped as already held, while a reused trace id with other bytes is a second
 * event with its own entries (spec-decisions D30). Payloads hold what a replay needs to check the entry.
 */
import type { LedgerDraft, LedgerEntryType } from './types.js';

/** Who and when: common to every ACM entry. */
export interface AcmEntryBase {
  trace_id: string;
  agent_id: string;
  tenant?: string;
  run_id: string;
  /** Event time (ms) of the trace. */
  ts_ms: number;
  /** The event's idempotency id (the entry key); the trace id when absent. */
  event_id?: string;
}

/** `<prefix>:<event id>`: one entry per event, whatever its trace id (spec-decisions D30). */
export function entryIdOf(prefix: string, b: { trace_id: string; event_id?: string }): string {
  return `${prefix}:${b.event_id ?? b.trace_id}`;
}

const PREFIX: Record<Exclude<LedgerEntryType, 'POLICY_DECISION'>, string> = {
  PLAN_SELECTED: 'ps',
  BRANCH_TAKEN: 'bt',
  REPLAN_TRIGGERED: 'rt',
  COMPENSATION_APPLIED: 'ca',
  GOAL_AMENDED: 'ga',
};

function draft(type: Exclude<LedgerEntryType, 'POLICY_DECISION'>, b: AcmEntryBase, payload: Record<string, unknown>): LedgerDraft {
  const ts = Math.trunc(b.ts_ms);
  return {
    entry_id: entryIdOf(PREFIX[type], b),
    agent_id: b.agent_id,
    tenant: b.tenant ?? '',
    ts_ms: Number.isSafeInteger(ts) && ts >= 0 ? ts : 0,
    type,
    payload: { run_id: b.run_id, trace_id: b.trace_id, ...payload },
  };
}

export interface PlanSelectedInput extends AcmEntryBase {
  goal_id: string;
  plan_id: string;
  /** The plan's content address. */
  plan_digest: string;
  alternatives: { id: string; rationale?: string }[];
  method: string;
  rationale?: string;
  selector?: string;
  context: { id: string; version: number; digest: string };
  /** Set when this selection replaces an earlier one (a REPLAN_TRIGGERED precedes it). */
  replaces?: string;
}

export function planSelectedDraft(i: PlanSelectedInput): LedgerDraft {
  const { trace_id: _t, agent_id: _a, tenant: _n, run_id: _r, ts_ms: _s, event_id: _e, ...rest } = i;
  return draft('PLAN_SELECTED', i, { ...rest, selector: i.selector ?? i.method });
}

export interface BranchTakenInput extends AcmEntryBase {
  plan_id: string;
  from: string;
  to: string;
  /** Whether the recorded guard (or error type) allows the edge; false = a forbidden branch. */
  allowed: boolean;
  kind?: 'guard' | 'on_error' | 'plain' | 'none';
  guard?: string;
  on_error?: string;
  error_type?: string;
  /** The recorded facts the guard read. */
  facts?: Record<string, unknown>;
  /** The intervention the branch event was answered with. */
  intervention: string;
}

export function branchTakenDraft(i: BranchTakenInput): LedgerDraft {
  const { trace_id: _t, agent_id: _a, tenant: _n, run_id: _r, ts_ms: _s, event_id: _e, ...rest } = i;
  return draft('BRANCH_TAKEN', i, rest);
}

export interface ReplanTriggeredInput extends AcmEntryBase {
  cause: string;
  scope?: string;
  diff?: unknown;
  from_plan?: string;
  to_plan?: string;
  /** Gate replans (decision 18): the job and attempt. */
  job_id?: string;
}

export function replanTriggeredDraft(i: ReplanTriggeredInput): LedgerDraft {
  const { trace_id: _t, agent_id: _a, tenant: _n, run_id: _r, ts_ms: _s, event_id: _e, ...rest } = i;
  return draft('REPLAN_TRIGGERED', i, rest);
}

export interface CompensationAppliedInput extends AcmEntryBase {
  task_id: string;
  reason: string;
  plan_id?: string;
}

export function compensationAppliedDraft(i: CompensationAppliedInput): LedgerDraft {
  const { trace_id: _t, agent_id: _a, tenant: _n, run_id: _r, ts_ms: _s, event_id: _e, ...rest } = i;
  return draft('COMPENSATION_APPLIED', i, rest);
}

export interface GoalAmendedInput extends AcmEntryBase {
  goal_id?: string;
  by: string;
  delta: unknown;
}

export function goalAmendedDraft(i: GoalAmendedInput): LedgerDraft {
  const { trace_id: _t, agent_id: _a, tenant: _n, run_id: _r, ts_ms: _s, event_id: _e, ...rest } = i;
  return draft('GOAL_AMENDED', i, rest);
}

/** POLICY_DECISION of an event of a run: the decision plus what a replay checks it against. */
export interface AcmPolicyDecisionInput {
  trace_id: string;
  /** As AcmEntryBase.event_id. */
  event_id?: string;
  agent_id: string;
  tenant?: string;
  run_id: string;
  hook: string;
  ts_ms: number;
  blueprint: string;
  /** The final intervention (blueprint and ACM checks combined, the most severe). */
  intervention: string;
  approved: boolean;
  stage?: string;
  reasons?: string[];
  tripwires?: { id: string; fired: boolean }[];
  rules?: { id: string; passed: boolean }[];
  engine_version?: string;
  task_id?: string;
  /** sha256 (hex) of the canonical policy request and response records (replay bundle). */
  request_digest?: string;
  response_digest?: string;
  /** sha256 (hex) of the policy files the decision was taken under (blueprints, registry, config, sheets). */
  policy_digest?: string;
  /** The ACM checks' own outcome, combined into `intervention`. */
  acm?: { intervention: string; codes: string[] };
}

export function acmPolicyDecisionDraft(d: AcmPolicyDecisionInput): LedgerDraft {
  const ts = Math.trunc(d.ts_ms);
  const payload: Record<string, unknown> = {
    trace_id: d.trace_id,
    blueprint: d.blueprint,
    decision: d.approved ? 'allow' : 'deny',
    intervention: d.intervention,
    stage: d.stage ?? 'none',
    tripwires_fired: (d.tripwires ?? []).filter((t) => t.fired).map((t) => t.id),
    rules_failed: (d.rules ?? []).filter((r) => !r.passed).map((r) => r.id),
    reasons: d.reasons ?? [],
    ...(d.engine_version ? { engine_version: d.engine_version } : {}),
    run_id: d.run_id,
    hook: d.hook,
  };
  if (d.task_id !== undefined) payload.task_id = d.task_id;
  if (d.acm) payload.acm = d.acm;
  if (d.request_digest) payload.request_digest = d.request_digest;
  if (d.response_digest) payload.response_digest = d.response_digest;
  if (d.policy_digest) payload.policy_digest = d.policy_digest;
  return {
    entry_id: entryIdOf('pd', d),
    agent_id: d.agent_id,
    tenant: d.tenant ?? '',
    ts_ms: Number.isSafeInteger(ts) && ts >= 0 ? ts : 0,
    type: 'POLICY_DECISION',
    payload,
  };
}
