/**
 * Shared contracts of the pure engine. Every stage (tripwire, scorer, trust debt, gate) and every edge
 * (consumers, CLI) speaks these types. Nothing here does I/O; clock, state and LLM come in through the
 * small interfaces at the bottom.
 */
import type { SourcePosition } from '../errors.js';

// ───────────────────────────── interventions ─────────────────────────────

/** Severity order (spec-decisions D1): ok < nudge < flag < escalate < block < halt. */
export const INTERVENTIONS = ['ok', 'nudge', 'flag', 'escalate', 'block', 'halt'] as const;
export type Intervention = (typeof INTERVENTIONS)[number];

const RANK: Record<Intervention, number> = { ok: 0, nudge: 1, flag: 2, escalate: 3, block: 4, halt: 5 };
export function severityRank(i: Intervention): number {
  return RANK[i];
}
export function mostSevere(a: Intervention, b: Intervention): Intervention {
  return RANK[a] >= RANK[b] ? a : b;
}
/** PVS-1 `approved` is true for ok, nudge and flag (spec-decisions D1). */
export function isApproved(i: Intervention): boolean {
  return RANK[i] <= RANK.flag;
}

export type TripwireSeverity = 'standard' | 'critical' | 'severe' | (string & {});

// ───────────────────────────── traces and agents ─────────────────────────────

export interface SourceRef {
  id: string;
  category?: string;
  trust?: number;
  [k: string]: unknown;
}

/** contracts C1. Unknown fields are kept and reachable from conditions. */
export interface Trace {
  trace_id: string;
  agent_id: string;
  timestamp: string;
  hook: string;
  tool?: string;
  args?: Record<string, unknown>;
  /** What the action does; on ACM hooks the ACM §14.1 action name (the hook itself, contracts C1). */
  action?: Record<string, unknown> | string;
  reasoning?: string;
  content?: string;
  context?: Record<string, unknown>;
  sources?: SourceRef[];
  destination?: string;
  response_size?: number;
  session_id?: string;
  goal_id?: string;
  plan_id?: string;
  task_id?: string;
  [k: string]: unknown;
}

/** ACL-0..ACL-5; GT-n is accepted as an alias on input and normalised to ACL-n. */
export type AclTier = 'ACL-0' | 'ACL-1' | 'ACL-2' | 'ACL-3' | 'ACL-4' | 'ACL-5';

/** From the trusted agent registry (contracts C2), never from the trace. */
export interface AgentInfo {
  id: string;
  tenant: string;
  tier: AclTier;
  tools: string[];
  domains: string[];
  /** false when the agent is not in the registry (default tier, global blueprints only). */
  registered: boolean;
  /** Skills the registry lists for the agent; a trace's skill_id selects per-skill gate settings only for these (docs/gate.md). */
  skills?: string[];
  /**
   * Ed25519 public keys (PEM) the agent signs its traces with (docs/security.md): an agent with keys must
   * sign every trace; the registry's key ids (sha256 of the key, 16 hex) name them in signatures.
   */
  publicKeys?: string[];
  /**
   * API keys of the HTTP ingress (docs/http.md), hashed at rest: `sha256:<64 hex>` of the key's text; a
   * request's agent is its key's agent (docs/spec-decisions.md D24).
   */
  apiKeys?: string[];
}

// ───────────────────────────── thresholds ─────────────────────────────

/** Risk-space boundaries (ACGP-1004 §11): risk <= ok → ok, <= nudge → nudge, <= escalate → escalate, else block. */
export interface RiskThresholds {
  ok: number;
  nudge: number;
  escalate: number;
  block: number;
  /** Optional flag boundary (from ctq.thresholds.flag converted to risk space, spec-decisions D2). */
  flag?: number;
}

// ───────────────────────────── conditions (DSL) ─────────────────────────────

/** Per-agent/tenant state used by stateful DSL functions (exceeds_rate, storage.get). */
export interface StateStore {
  /** Reads a value previously stored under the agent/tenant namespace. */
  get(namespace: string, key: string): Promise<unknown>;
  set?(namespace: string, key: string, value: unknown): Promise<void>;
  /**
   * Sliding-window rate: records one hit identified by `hitId` (idempotent per id) at `nowMs`
   * and returns the number of hits within (nowMs - windowMs, nowMs]. Atomic across instances.
   */
  hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number>;
}

export interface Clock {
  nowMs(): number;
}

/** What a compiled condition sees at evaluation time. Built once per trace, shared by all conditions. */
export interface EvalContext {
  trace: Trace;
  agent: AgentInfo;
  /** The agent's current trust debt (0..1). */
  trustDebt: number;
  /** Event time in ms (the trace timestamp in `eval`, event time in the stream). */
  nowMs: number;
  /** Namespace for state keys: `${tenant}:${agent_id}`. */
  stateNamespace: string;
  /**
   * Identity of this trace for idempotent state effects (rate-limit hits, trust debt); trace_id when
   * unset. The stream adds a digest of the record so a reused trace_id cannot make a different trace a
   * "redelivery" (docs/spec-decisions.md).
   */
  eventId?: string;
  state?: StateStore;
}

export interface CompiledCondition {
  /** Original text (or canonical rendering of a structured condition) for messages. */
  readonly source: string;
  /** True when the condition calls a stateful function; evaluate may then return a Promise. */
  readonly async: boolean;
  /** Names of functions used (for load-time tier checks, e.g. exceeds_rate needs eval_tier 1). */
  readonly functions: ReadonlySet<string>;
  /** Never throws for missing fields (comparison against a missing field is false). May throw StewardError for state failures. */
  evaluate(ctx: EvalContext): boolean | Promise<boolean>;
}

/** Matches trace keys (hook, tool, any field; an array value means any-of). Compiled once. */
export type WhenMatcher = (trace: Trace) => boolean;

// ───────────────────────────── compiled blueprint ─────────────────────────────

export interface OnFail {
  decision: Intervention;
  reason: string;
}

export interface CompiledTripwire {
  id: string;
  when: WhenMatcher;
  condition: CompiledCondition;
  evalTier: 0 | 1;
  latencyBudgetMs: number;
  requiresState: boolean;
  severity: TripwireSeverity;
  onFail: OnFail;
  position?: SourcePosition;
}

export interface CompiledRule {
  id: string;
  when: WhenMatcher;
  condition: CompiledCondition;
  onFail: OnFail;
  position?: SourcePosition;
}

/** A metric check (§6.3) or a ctq.metrics entry (§7.1), normalised to one shape. */
export interface CompiledMetric {
  /** Check id (or the metric name for ctq.metrics entries). */
  id: string;
  name: string;
  weight: number;
  when: WhenMatcher;
  /** Scorer type: rule-based | pattern-match | source-match | llm-judge | hybrid | custom name. */
  scorer: string;
  parameters: Record<string, unknown>;
  position?: SourcePosition;
}

export interface TrustDebtConfig {
  enabled: boolean;
  accumulation: Partial<Record<Intervention, number>>;
  decay: { rate: number; periodHours: number; minDebt: number };
  recovery: {
    enabled: boolean;
    successfulReviewCredit: number;
    goodBehaviorAudit: { thresholdHours: number; credit: number };
    agentRemediationRequest: boolean;
  };
  thresholds: { elevatedMonitoring: number; restrictedMode: number; reTieringReview: number };
  severityWeights: Record<string, number>;
}

export type FallbackOnTimeout = 'deny' | 'allow_and_log' | 'cached_decision' | 'escalate';

export interface EvidenceRequirements {
  minCertifiedSources?: number;
  sourceCategories?: string[];
  minTrustScore?: number;
}

export interface BlueprintScope {
  agentTier?: AclTier[];
  tools?: string[];
  domains?: string[];
}

export interface CompiledBlueprint {
  /** The blueprint id as written (e.g. `finance/trading_bot@1.0`). */
  id: string;
  /** Semver of the blueprint (e.g. `1.0.0`). */
  version: string;
  description: string;
  /** Resolved ancestor keys, root first (clarity.baseline first). */
  chain: string[];
  scope: BlueprintScope;
  tripwires: CompiledTripwire[];
  rules: CompiledRule[];
  metrics: CompiledMetric[];
  ctq: {
    aggregation: string;
    profile?: string;
    thresholds?: Partial<Record<'ok' | 'nudge' | 'flag' | 'block', number>>;
    /** safety-critical profile (§7.3.4): every non-ok outcome is marked for human review. */
    requireHumanReview?: boolean;
  };
  evidence?: EvidenceRequirements;
  /** Blueprint risk thresholds (§11), before the stricter-of rule with the tier. */
  scoring: RiskThresholds;
  trustDebt: TrustDebtConfig;
  /** Named lists (spec-decisions D9), merged with the steward config's lists. */
  lists: Record<string, string[]>;
  fallbackOnTimeout?: FallbackOnTimeout;
  /** The resolved authored form (after inheritance), for snapshots and `steward diff`. */
  resolved: Record<string, unknown>;
  file?: string;
  /** The finalization gate: `finalization_gate:` + `guardrails:` compiled (docs/gate.md). */
  gate?: CompiledGate;
  /** Tools whose calls need a human approval (`tools[].requires_approval`, docs/approvals.md), parent first. */
  approvals?: ApprovalPolicy[];
}

/** A tool's approval policy (gate spec §6; docs/approvals.md). */
export interface ApprovalPolicy {
  tool: string;
  /** A trigger (not an invariant): the call needs approval when it evaluates to true. */
  condition: CompiledCondition;
  timeoutMs: number;
  defaultAction: 'approve' | 'deny';
  /** The approver role that may answer (docs/approvals.md "Approvers"); undefined: any registered approver of the tenant. */
  role?: string;
  /** Per-skill overrides of timeout, default action and role (a trace's registry-checked skill_id). */
  skills?: Record<string, { timeoutMs?: number; defaultAction?: 'approve' | 'deny'; role?: string }>;
  position?: SourcePosition;
}

// ───────────────────────────── stage results ─────────────────────────────

export interface TripwireOutcome {
  id: string;
  fired: boolean;
  decision?: Intervention;
  reason?: string;
  severity?: TripwireSeverity;
  /** Set when the condition could not be evaluated (timeout, state error) and the fallback applied. */
  error?: { code: string; message: string };
  /** Absent on outcomes that travelled through acgp.scoring (the scoring message drops per-check latencies). */
  latencyMs?: number;
}

export interface RuleOutcome {
  id: string;
  passed: boolean;
  decision?: Intervention;
  reason?: string;
  error?: { code: string; message: string };
  /** As TripwireOutcome.latencyMs. */
  latencyMs?: number;
}

/** Output of the tripwire stage (eval tier 0–1). */
export interface TripwireStageResult {
  traceId: string;
  agentId: string;
  blueprint: string;
  intervention: Intervention;
  stage: 'tripwire' | 'rule' | 'none';
  halted: boolean;
  tripwires: TripwireOutcome[];
  rules: RuleOutcome[];
  reasons: string[];
  /** Severity of the tripwire that produced the final intervention (for trust-debt weighting). */
  severity?: TripwireSeverity;
  latencyMs: number;
  /**
   * The intervention was forced by an unavailable dependency (a check that failed closed because Redis was
   * down or slow): kept, but it moves no trust debt (spec-decisions D20).
   */
  degraded?: boolean;
}

export type MetricStatus = 'ok' | 'unavailable' | 'skipped';

export interface MetricOutcome {
  name: string;
  score: number | null;
  weight: number;
  confidence: number;
  scorer: string;
  status: MetricStatus;
  explanation?: string;
}

/** Scorer protocol result (ACGP-1004 §7.4). */
export interface ScorerResult {
  score: number;
  confidence: number;
  explanation: string;
  evidence: Record<string, unknown>;
  latencyMs: number;
}

// ───────────────────────────── verdicts ─────────────────────────────

/** PVS-1 verdict (schemas/pvs-1.schema.json). */
export interface PvsVerdict {
  version: 'pvs-1';
  approved: boolean;
  reasoning: string;
  policy_violations: string[];
  confidence_score: number;
  policy_set?: string[];
  metadata?: {
    engine: string;
    engine_version: string;
    latency_ms: number;
    tenant_id?: string;
    agent_id?: string;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

// ───────────────────────────── trust debt ─────────────────────────────

export type TrustDebtLevel = 'normal' | 'elevated_monitoring' | 'restricted_mode' | 're_tiering_review';

export interface TrustDebtSnapshot {
  before: number;
  after: number;
  level: TrustDebtLevel;
}

// ───────────────────────────── LLM ─────────────────────────────

export interface LlmRequest {
  model?: string;
  system?: string;
  prompt: string;
  temperature: number;
  maxTokens: number;
  timeoutMs: number;
}

export interface LlmResponse {
  text: string;
  model?: string;
  latencyMs: number;
}

/** Implemented by adapters (OpenAI-compatible, Anthropic); the engine only sees this. */
export interface LlmClient {
  complete(req: LlmRequest, signal?: AbortSignal): Promise<LlmResponse>;
  /** Releases what the client holds beyond its calls (the LLM thread of llm.thread); absent = nothing to release. */
  close?(): Promise<void>;
}

// ───────────────────────────── finalization gate (compiled; src/engine/gate, docs/gate.md) ─────────────────────────────

/** A compiled RE2 pattern with the text shown when it hits. */
export interface GatePattern {
  id: string;
  source: string;
  message: string;
  test(text: string): boolean;
}

export type OnJudgeError = 'escalate' | 'block' | 'finalize_with_limitations' | 'finalize';

export interface CustomReasonCode {
  code: string;
  hardFail: boolean;
}

/** Effective settings of one gate (the blueprint's, or a skill's: the blueprint's with the skill's override). */
export interface GateSettings {
  enabled: boolean;
  maxRetries: number;
  strictness: 'low' | 'medium' | 'high';
  prompt: 'A' | 'B' | 'lite';
  model?: string;
  judgeTimeoutMs?: number;
  customReasonCodes: CustomReasonCode[];
  /** Custom intents → required elements (§9.4); built-in intents are in codes.ts. */
  intents: Record<string, string[]>;
  safetyPatterns: GatePattern[];
  keywordBlocklist: GatePattern[];
  onJudgeError: OnJudgeError;
}

export type GuardrailHook = 'final_answer' | 'tool_call';

interface GuardrailBase {
  id: string;
  description?: string;
  when: WhenMatcher;
  /** Only for these skills (the trace's registry-checked skill_id); undefined = every job. */
  skills?: string[];
  position?: SourcePosition;
}

/** Tier 1, hard safety: mechanical only (a DSL invariant and/or RE2 patterns), 100% enforced. */
export interface Tier1Rule extends GuardrailBase {
  tier: 1;
  appliesTo: readonly GuardrailHook[];
  /** DSL invariant (spec-decisions D11, as restated in docs/gate.md): the rule is violated when it is false. */
  condition?: CompiledCondition;
  /** A match is a violation: on the draft at the gate, on the string leaves of `args` at tool_call. */
  patterns: GatePattern[];
  message: string;
}

/** Tier 2, process: ordered tool steps. */
export interface Workflow extends GuardrailBase {
  tier: 2;
  steps: string[];
  /** Every step must have happened before the answer is final (else only their order is enforced). */
  required: boolean;
  stepsPosition?: SourcePosition;
}

/** Tier 3, style: soft guidance handed back in directives; never fails the gate. */
export interface StyleRule extends GuardrailBase {
  tier: 3;
  text: string;
}

export type Guardrail = Tier1Rule | Workflow | StyleRule;

export interface CompiledGate {
  settings: GateSettings;
  /** Effective settings per skill id (base + override), used only for skills the registry lists for the agent. */
  skills: Record<string, GateSettings>;
  tier1: Tier1Rule[];
  workflows: Workflow[];
  style: StyleRule[];
}
