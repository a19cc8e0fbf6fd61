/**
 * CTQ (ACGP-1004 §7, §11; spec-decisions D2–D6, D13, D14). Pure functions: aggregate metric outcomes,
 * map risk to an intervention through the effective thresholds (stricter-of blueprint, tier,
 * ctq.thresholds, restricted mode). The fallback for unavailable scorers is the governance contract's.
 */
import type { RiskThresholds, AclTier, FallbackOnTimeout, Intervention, MetricOutcome } from '../types.js';
import { mostSevere, severityRank } from '../types.js';

// Thresholds live with the blueprint module (one implementation of the stricter-of rule); re-exported here.
export { effectiveThresholds, riskToIntervention } from '../blueprint/thresholds.js';
import { riskToIntervention } from '../blueprint/thresholds.js';

export interface CtqResult {
  /** null when no metric matched or all were skipped (spec-decisions D14). */
  ctq: number | null;
  risk: number | null;
  /** Coverage (answered / matched weight) times the weighted mean scorer confidence; 1 when nothing matched. */
  confidence: number;
  coverage: number;
  answeredWeight: number;
  matchedWeight: number;
  unavailable: string[];
}

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

export function computeCtq(metrics: MetricOutcome[]): CtqResult {
  let sw = 0;
  let sws = 0;
  let swc = 0;
  let matched = 0;
  const unavailable: string[] = [];
  for (const m of metrics) {
    if (m.status === 'skipped') continue;
    matched += m.weight;
    if (m.status === 'ok' && m.score !== null) {
      sw += m.weight;
      sws += m.weight * m.score;
      swc += m.weight * m.confidence;
    } else unavailable.push(m.name);
  }
  if (sw <= 0) {
    return { ctq: null, risk: null, confidence: matched > 0 ? 0 : 1, coverage: matched > 0 ? 0 : 1, answeredWeight: 0, matchedWeight: matched, unavailable };
  }
  const ctq = round(sws / sw);
  const coverage = sw / matched;
  return {
    ctq,
    risk: round(1 - ctq),
    confidence: round(coverage * (swc / sw)),
    coverage: round(coverage),
    answeredWeight: sw,
    matchedWeight: matched,
    unavailable,
  };
}

/** spec-decisions D5: allow_and_log (flag) below ACL-4, escalate from ACL-4, unless the contract says otherwise. */
export function fallbackPolicy(tier: AclTier, configured?: FallbackOnTimeout): FallbackOnTimeout {
  if (configured) return configured;
  return tier === 'ACL-4' || tier === 'ACL-5' ? 'escalate' : 'allow_and_log';
}

/**
 * `cached_decision` with nothing cached yet (a new agent, a restarted or rebalanced instance: the cache is per
 * engine instance) takes the tier's default: an approved `flag` at ACL-4 would let a high-tier action through
 * unscored, where the tier default escalates.
 */
export function fallbackIntervention(policy: FallbackOnTimeout, cached?: Intervention, tier?: AclTier): Intervention {
  switch (policy) {
    case 'deny':
      return 'block';
    case 'escalate':
      return 'escalate';
    case 'cached_decision':
      return cached ?? (tier ? fallbackIntervention(fallbackPolicy(tier)) : 'flag');
    default:
      return 'flag';
  }
}

export interface CtqDecision extends CtqResult {
  thresholds: RiskThresholds;
  /** Intervention from CTQ alone (null when CTQ adds nothing). */
  intervention: Intervention | null;
  fallback?: { policy: FallbackOnTimeout; intervention: Intervention };
  /** The fallback for unavailable metrics made the intervention more severe than the answered metrics did (D20). */
  degraded: boolean;
}

export function decideCtq(
  metrics: MetricOutcome[],
  th: RiskThresholds,
  fallback: { policy: FallbackOnTimeout; cached?: Intervention; tier?: AclTier },
): CtqDecision {
  const r = computeCtq(metrics);
  let intervention: Intervention | null = r.risk === null ? null : riskToIntervention(r.risk, th);
  let fb: CtqDecision['fallback'];
  let degraded = false;
  if (r.unavailable.length > 0) {
    fb = { policy: fallback.policy, intervention: fallbackIntervention(fallback.policy, fallback.cached, fallback.tier) };
    const own = intervention;
    intervention = intervention === null ? fb.intervention : mostSevere(intervention, fb.intervention);
    degraded = severityRank(intervention) > severityRank(own ?? 'ok');
  }
  return { ...r, thresholds: th, intervention, fallback: fb, degraded };
}
