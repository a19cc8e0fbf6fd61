/** A blueprint as the engine runs it: compiled checks, thresholds, trust-debt settings, approvals (the authored form is blueprint/). */
import type { SourcePosition } from '../errors.js';
import type { Intervention, TripwireSeverity } from './intervention.js';
import type { AclTier } from './trace.js';
import type { CompiledCondition, WhenMatcher } from './condition.js';
import type { CompiledGate } from './compiled-gate.js';

/** Risk-space boundaries (ACGP-1004 §11): risk <= ok → ok, <= nudge → nudge, <= escalate → escalate, else block. */
export interface RiskThresholds {
  ok: number;
  nudge: number;
  escalate: number;
  block: number;
  /** Optional flag boundary (from ctq.thresholds.flag converted to risk space, spec-decisions D2). */
  flag?: number;
}

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
