/** What the stages produce: tripwire and rule outcomes, metric and scorer results, the PVS-1 verdict, the trust-debt move. */
import type { Intervention, TripwireSeverity } from './intervention.js';

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
