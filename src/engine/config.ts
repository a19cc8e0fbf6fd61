/**
 * Engine-level settings (the policy-relevant part of steward.yaml). Defaults are spec-decisions D3/D5/D6.
 * The process-level config (Kafka, Redis, ClickHouse URLs) lives outside the engine.
 */
import type { AclTier, FallbackOnTimeout, RiskThresholds } from './types.js';

export interface TierSettings {
  thresholds: RiskThresholds;
  latencyBudgetMs: { typical: number; max: number };
}

export interface EngineConfig {
  defaultTier: AclTier;
  tiers: Record<AclTier, TierSettings>;
  /** Every risk boundary is lowered by this much in restricted mode (spec-decisions D6). */
  restrictedModeTightening: number;
  /** Named lists for in_allowlist / in_denylist (spec-decisions D9). */
  lists: Record<string, string[]>;
  /** Hosts/domains (suffix match) and CIDRs that is_external() treats as internal, on top of private ranges and localhost. */
  internalDomains: string[];
  internalCidrs: string[];
  /** Named regexes for matches_regex(field, "NAME"). */
  namedPatterns: Record<string, string>;
  /** Governance-contract fallback when a scorer/tripwire cannot answer; undefined = tier default (spec-decisions D5). */
  fallbackOnTimeout?: FallbackOnTimeout;
  /** Verdicts below this confidence are marked for human review (PVS-1 §5.3). */
  humanReviewConfidence: number;
  /**
   * Workflow complexity limits of the finalization gate checked at load (gate spec §11; GateLoadLimits, default 5
   * steps, 3 workflows): `blueprints.workflow_limits`, so every load of this config (run, hot reload, eval,
   * validate --config, rollout) applies the same ones. CompileOptions.gateLimits, when given, wins.
   */
  gateLimits?: { maxWorkflowSteps: number; maxWorkflows: number };
}

const t = (ok: number, nudge: number, escalate: number, block: number, typical: number, max: number): TierSettings => ({
  thresholds: { ok, nudge, escalate, block },
  latencyBudgetMs: { typical, max },
});

export const DEFAULT_TIERS: Record<AclTier, TierSettings> = {
  'ACL-0': t(0.35, 0.5, 0.65, 0.8, 10, 50),
  'ACL-1': t(0.3, 0.45, 0.6, 0.75, 20, 100),
  'ACL-2': t(0.25, 0.4, 0.55, 0.7, 50, 150),
  'ACL-3': t(0.2, 0.35, 0.5, 0.5, 100, 200),
  'ACL-4': t(0.15, 0.3, 0.45, 0.45, 200, 350),
  'ACL-5': t(0.1, 0.2, 0.35, 0.35, 500, 1000),
};

export function defaultEngineConfig(overrides: Partial<EngineConfig> = {}): EngineConfig {
  return {
    defaultTier: 'ACL-2',
    tiers: DEFAULT_TIERS,
    restrictedModeTightening: 0.1,
    lists: {},
    internalDomains: [],
    internalCidrs: [],
    namedPatterns: {},
    humanReviewConfidence: 0.9,
    ...overrides,
  };
}

/** Accepts ACL-n and the GT-n alias (contracts C2); returns undefined for anything else. */
export function normalizeTier(s: unknown): AclTier | undefined {
  if (typeof s !== 'string') return undefined;
  const m = /^(?:ACL|GT)-([0-5])$/i.exec(s.trim());
  return m ? (`ACL-${m[1]}` as AclTier) : undefined;
}
