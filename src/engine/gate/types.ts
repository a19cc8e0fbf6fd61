/**
 * Types of the finalization gate (docs/gate.md): the compiled `finalization_gate:` and `guardrails:`
 * blocks, the per-job state, and the outcome every caller (stage, eval, HTTP) receives. Everything that
 * crosses a process boundary is plain snake_case JSON.
 */
import type { LedgerDraft } from '../ledger/types.js';
import type { Intervention } from '../types.js';
import type { FixMode, GateAction, GateVerdict, JudgedBy } from './codes.js';

// ───────────────────────────── compiled configuration ─────────────────────────────
// In ../types.ts (CompiledBlueprint.gate carries them; keeping them there avoids an import cycle).
export type { CompiledGate, CustomReasonCode, GatePattern, GateSettings, Guardrail, GuardrailHook, OnJudgeError, StyleRule, Tier1Rule, Workflow } from '../types.js';

/** Load-time limits of gate spec §11 (configurable; docs/gate.md). */
export interface GateLoadLimits {
  maxWorkflowSteps: number;
  maxWorkflows: number;
}
export const DEFAULT_GATE_LOAD_LIMITS: GateLoadLimits = { maxWorkflowSteps: 5, maxWorkflows: 3 };

/** Runtime limits: scanning that cannot finish within them fails closed (gate spec §2, docs/gate.md). */
export interface GateRuntimeLimits {
  /** Characters of draft the output scan reads; a longer draft is blocked unscanned. */
  maxScanChars: number;
  /** Nesting depth of tool-call `args` the pre-tool scan walks. */
  maxScanDepth: number;
  /** String leaves of tool-call `args` the pre-tool scan reads. */
  maxScanLeaves: number;
  /** Judge calls in flight across the gate instance. */
  maxJudgeInFlight: number;
  /** One judge call (the default of `finalization_gate.judge_timeout_ms`). */
  judgeTimeoutMs: number;
  /** Tool calls and attempts kept per job state (the newest). */
  maxRecordedToolCalls: number;
  maxRecordedAttempts: number;
  /** Characters of the draft put into the judge prompt (start and end kept). */
  maxDraftPromptChars: number;
  /** How long after its rewrite directive a rewrite-only job holds the agent's job-less tool calls (D45). */
  rewriteOnlyHoldMs: number;
}
export const DEFAULT_GATE_RUNTIME_LIMITS: GateRuntimeLimits = {
  maxScanChars: 1_000_000,
  maxScanDepth: 32,
  maxScanLeaves: 10_000,
  maxJudgeInFlight: 16,
  judgeTimeoutMs: 10_000,
  maxRecordedToolCalls: 64,
  maxRecordedAttempts: 16,
  maxDraftPromptChars: 24_000,
  rewriteOnlyHoldMs: 15 * 60_000,
};

// ───────────────────────────── job state ─────────────────────────────

export interface GateToolCall {
  event_id: string;
  tool: string;
  ts_ms: number;
  /** Blocked calls never ran: they are neither evidence nor workflow steps. */
  blocked: boolean;
  /** File-like arguments (path, file, ...) for the tool trace summary. */
  files?: string[];
  /** The call reached outside (a URL argument or a web/http tool). */
  external?: boolean;
}

export interface GateAttempt {
  event_id: string;
  index: number;
  ts_ms: number;
  abstraction_level: string | null;
  artifact_type: string | null;
  /** Non-blocked tool calls recorded for the job when this attempt was decided. */
  evidence: number;
  clarification: string | null;
  action: GateAction;
  verdict: GateVerdict | null;
  /**
   * The decided outcome in compact form (stored-outcome.ts): a redelivery of the same event gets it again,
   * `user_feedback` re-emits its finalization_outcome.
   */
  o?: PackedOutcome;
  /** The whole decided outcome, as states written before the compact form held it (read, never written). */
  outcome?: GateOutcome;
}

/**
 * What the events take from the trace and the judge call rather than from the outcome (events.ts). Kept with a
 * decided attempt, so a redelivery or a later `user_feedback` rebuilds the same events without the trace.
 */
export interface EventFacts {
  session_id: string | null;
  intent_id: string | null;
  user_id_hash: string | null;
  capability_profile_id: string | null;
  model_id: string | null;
  token_cost: number | null;
  latency_ms: number;
}

/**
 * A decided outcome as a job state keeps it (docs/gate.md "Job state"): the GateOutcome without what the state or
 * the attempt already holds (job, agent, tenant, event id, verdict, action) and without the events and ledger
 * draft, which are rebuilt from it (a third of the bytes).
 */
export type StoredOutcome = Pick<
  GateOutcome,
  | 'quality_score' | 'reason_codes' | 'fix_mode' | 'attempt_index' | 'judged_by' | 'missing_requirements' | 'directive'
  | 'intervention' | 'degraded' | 'trace_id' | 'blueprint' | 'skill_id' | 'hits' | 'dropped_reason_codes'
  | 'evidence_issues' | 'next_actions' | 'anti_loop' | 'judge_error' | 'trust_debt'
> & {
  facts: EventFacts;
  /** The job's start as this decision saw it (time_to_finalize_ms). */
  job_start_ms: number;
};

/** Stored-outcome fields that most decisions leave at their default (stored-outcome.ts packStored leaves them out). */
export type DefaultedOutcomeField =
  | 'reason_codes' | 'fix_mode' | 'missing_requirements' | 'directive' | 'degraded' | 'skill_id' | 'hits'
  | 'dropped_reason_codes' | 'evidence_issues' | 'next_actions' | 'anti_loop' | 'judge_error';

/** A StoredOutcome as the job state keeps it: default-valued fields (and facts) may be absent. */
export type PackedOutcome = Omit<StoredOutcome, DefaultedOutcomeField | 'facts'> &
  Partial<Pick<StoredOutcome, DefaultedOutcomeField>> & { facts: Pick<EventFacts, 'latency_ms'> & Partial<EventFacts> };

/** What the metrics read of a job's earlier ending that a later one replaces (GateOutcome.supersedes). */
export type SupersededEnding = Pick<FinalizationOutcomeEvent, 'intent_id' | 'final_verdict' | 'action' | 'num_retries'>;

/** Per-job state, plain JSON (a Redis implementation stores it as is). */
export interface GateJobState {
  v: 1;
  job_id: string;
  tenant: string;
  agent_id: string;
  created_ms: number;
  updated_ms: number;
  /** final_answer attempts decided so far (attempt_index of the next one). */
  attempt_count: number;
  attempts: GateAttempt[];
  /** The newest tool calls (limits.maxRecordedToolCalls): evidence details and the judge's tool trace summary. */
  tool_calls: GateToolCall[];
  /**
   * Completed workflow steps, kept apart from `tool_calls` so no later call pushes a step out: the matched step
   * prefix of each workflow of the job's blueprint that has one (workflow.ts advanceStepsDone). Absent until a
   * step ran, and in states written before it (then progress is read from `tool_calls`, as those builds did).
   */
  steps_done?: string[][];
  /** Non-blocked tool calls ever recorded (the list above keeps only the newest). */
  evidence_count: number;
  /** §9.7: after a rewrite directive the job may not call tools until its next final answer. */
  rewrite_only: boolean;
  /** An ask_user was answered for this job: from then on `clarification` counts as a difference. */
  asked_user: boolean;
}

export interface GateJobKey {
  tenant: string;
  agentId: string;
  jobId: string;
}

/**
 * Where job states live: in memory for `steward eval`, in Redis for the stream (written elsewhere against
 * this interface). TTLs run on event time (`nowMs`), never the wall clock.
 */
export interface GateJobStore {
  get(key: GateJobKey, nowMs: number): Promise<GateJobState | undefined>;
  /**
   * Atomic read-modify-write. `fn` is pure and may run more than once (optimistic retries under
   * contention); the stored state expires `ttl` after `nowMs`.
   */
  update(key: GateJobKey, nowMs: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState>;
  /** The agent's index of rewrite-only jobs (agent-index.ts, D45); same TTL rule as a job. */
  getAgent(key: GateAgentKey, nowMs: number): Promise<GateAgentState | undefined>;
  /** Atomic read-modify-write of the agent's index, as update(). */
  updateAgent(key: GateAgentKey, nowMs: number, fn: (prev: GateAgentState | undefined) => GateAgentState): Promise<GateAgentState>;
}

export interface GateAgentKey {
  tenant: string;
  agentId: string;
}

/** Per agent (D45): its jobs a rewrite directive put in rewrite-only state, job id → the directive's event time. */
export interface GateAgentState {
  v: 1;
  updated_ms: number;
  rewrite_only: Record<string, number>;
}

// ───────────────────────────── outcome ─────────────────────────────

export interface GateHit {
  kind: 'default' | 'safety_pattern' | 'keyword' | 'tier1' | 'workflow' | 'rewrite_only' | 'scan_limit';
  id: string;
  message: string;
}

export interface NextAction {
  type: 'rewrite' | 'tool' | 'question';
  instruction: string;
  priority?: 'high' | 'med' | 'low';
}

/** What every acgp.gate event carries: the envelope the sink reads and the §9.13 ids of the job. */
export interface GateEventEnvelope {
  event_id: string;
  trace_id: string;
  agent_id: string;
  tenant: string;
  intervention: Intervention;
  timestamp: string;
  ts_ms: number;
  job_id: string;
  session_id: string | null;
  intent_id: string | null;
}

/** §9.13 `final_alignment_judge_result`. */
export interface FinalAlignmentJudgeResultEvent extends GateEventEnvelope {
  event: 'final_alignment_judge_result';
  user_id_hash: string | null;
  capability_profile_id: string | null;
  skill_id: string | null;
  quality_score: number | null;
  verdict: GateVerdict | null;
  reason_codes: string[];
  fix_mode: FixMode | null;
  attempt_index: number;
  action: GateAction;
  judged_by: JudgedBy;
  degraded: boolean;
  model_id: string | null;
  token_cost: number | null;
  latency_ms: number;
}

/** §9.13 `finalization_outcome`: written when the job ends (finalize, finalize_with_limitations, block). */
export interface FinalizationOutcomeEvent extends GateEventEnvelope {
  event: 'finalization_outcome';
  final_verdict: 'pass' | 'caveats' | 'fail';
  action: GateAction;
  num_retries: number;
  time_to_finalize_ms: number;
  /** Arrives later as a `hook: user_feedback` trace (docs/gate.md); null until then. */
  user_feedback: 'up' | 'down' | null;
}

/** What the trust-debt stage needs (decision 21 as restated in docs/gate.md). */
export interface GateTrustDebt {
  intervention: Intervention;
  severity: 'standard' | 'critical';
  /** Repair-loop actions and degraded outcomes move no debt. */
  no_debt: boolean;
}

export interface GateOutcome {
  // contracts C5 eval fields (docs/gate.md), in this order
  verdict: GateVerdict | null;
  quality_score: number | null;
  reason_codes: string[];
  fix_mode: FixMode | null;
  attempt_index: number;
  action: GateAction;
  judged_by: JudgedBy;
  missing_requirements: string[];
  directive: string | null;
  // the rest
  intervention: Intervention;
  degraded: boolean;
  job_id: string;
  trace_id: string;
  event_id: string;
  agent_id: string;
  tenant: string;
  blueprint: string;
  skill_id: string | null;
  hits: GateHit[];
  /** Codes the judge returned that are neither built-in nor the blueprint's (dropped, decision 16). */
  dropped_reason_codes: string[];
  evidence_issues: string[];
  next_actions: NextAction[];
  /** Why a repair became an anti-loop ending: finalize_with_limitations, or block when the draft still fails safety, policy or a workflow step (D45). */
  anti_loop: 'max_retries' | 'no_difference' | null;
  judge_error: { code: string; message: string } | null;
  /** True when this is the stored answer to an event already decided (a redelivery). */
  redelivered: boolean;
  trust_debt: GateTrustDebt;
  events: { final_alignment_judge_result: FinalAlignmentJudgeResultEvent; finalization_outcome: FinalizationOutcomeEvent | null };
  /** A REPLAN_TRIGGERED entry for rewrite/replan/ask_user directives (decision 18). */
  ledger: LedgerDraft | null;
  /**
   * D45: on a fresh decision that ends a job which had ended before, that earlier ending (what the metrics counted
   * for the job), so the job counts once, as v_gate_jobs keeps one row per job. Absent otherwise and on redeliveries.
   */
  supersedes?: SupersededEnding;
}

/** Answer of the pre-tool gate for a `tool_call` trace. */
export interface ToolCallCheck {
  /** `block` when any reason below applies. */
  intervention: 'ok' | 'block';
  hits: GateHit[];
  /** True when the job is in rewrite-only state (§9.7: no tools). */
  rewrite_only: boolean;
  job_id: string | null;
}
