/**
 * Effective risk thresholds (spec-decisions D2/D3/D6, ACGP-1004 §11.2) and the risk → intervention map.
 */
import type { EngineConfig } from '../config.js';
import type { AclTier, CompiledBlueprint, Intervention, RiskThresholds } from '../types.js';

const BOUNDARIES = ['ok', 'nudge', 'escalate', 'block'] as const;

/**
 * Per boundary the minimum (stricter) of the blueprint, the ACL tier and the blueprint's ctq.thresholds
 * converted to risk space (1 − x); ctq.flag becomes the flag boundary, capped at the escalate boundary so
 * it can never relax an escalation. Restricted mode lowers every boundary by config.restrictedModeTightening,
 * clamped at 0.
 */
export function effectiveThresholds(bp: CompiledBlueprint, tier: AclTier, opts: { restricted: boolean; config: EngineConfig }): RiskThresholds {
  const tierT = (opts.config.tiers[tier] ?? opts.config.tiers[opts.config.defaultTier]).thresholds;
  const ctq = bp.ctq.thresholds ?? {};
  const out: RiskThresholds = { ok: 0, nudge: 0, escalate: 0, block: 0 };
  for (const b of BOUNDARIES) {
    let v = Math.min(bp.scoring[b], tierT[b]);
    const c = b === 'escalate' ? undefined : ctq[b];
    if (c !== undefined) v = Math.min(v, 1 - c);
    out[b] = v;
  }
  const flags = [bp.scoring.flag, tierT.flag, ctq.flag === undefined ? undefined : 1 - ctq.flag].filter((x): x is number => x !== undefined);
  if (flags.length) out.flag = Math.min(...flags, out.escalate);
  const tighten = opts.restricted ? opts.config.restrictedModeTightening : 0;
  const fix = (x: number): number => Math.max(0, round(x - tighten));
  const res: RiskThresholds = { ok: fix(out.ok), nudge: fix(out.nudge), escalate: fix(out.escalate), block: fix(out.block) };
  if (out.flag !== undefined) res.flag = fix(out.flag);
  return res;
}

// Keeps 0.35 - 0.1 at 0.25 instead of 0.24999999999999997 (boundaries are compared with <=).
function round(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

/** ACGP-1004 §11.2 with the flag boundary (spec-decisions D2): never halt — halt comes only from tripwires. */
export function riskToIntervention(risk: number, t: RiskThresholds): Intervention {
  if (risk <= t.ok) return 'ok';
  if (risk <= t.nudge) return 'nudge';
  if (t.flag !== undefined && risk <= t.flag) return 'flag';
  if (risk <= t.escalate) return 'escalate';
  return 'block';
}
