/**
 * Rollback triggers (ACGP-1004 §13.5.2; docs/rollout.md "Rollback triggers"). A blueprint's `rollback.trigger`
 * entries are compiled once; the monitor evaluates them on the per-arm counters of the current window.
 *
 *   <metric> > N%            the canary arm's rate above N %            (halt_rate > 1%)
 *   <metric>_delta > N%      canary rate minus stable rate above N points (intervention_rate_delta > 10%)
 *   … over <duration>        the window (default: rollout.window_ms)      (error_rate > 5% over 10m)
 *   manual_trigger           only `steward rollout rollback` (nothing to watch)
 * Metrics: intervention_rate (not ok), halt_rate (halted), block_rate (block or halt), error_rate (a check
 * errored or the decision was degraded). `>=` is accepted as well as `>`.
 */
import { parseDuration } from './duration.js';

export const TRIGGER_METRICS = ['intervention_rate', 'halt_rate', 'block_rate', 'error_rate'] as const;
export type TriggerMetric = (typeof TRIGGER_METRICS)[number];

export interface CompiledTrigger {
  source: string;
  metric: TriggerMetric;
  /** canary - stable instead of canary alone. */
  delta: boolean;
  op: '>' | '>=';
  /** Fraction (1% = 0.01). */
  threshold: number;
  windowMs?: number;
}

/** Per arm and window: decisions and how many of them counted for each metric. */
export interface ArmCounts {
  n: number;
  intervention: number;
  halt: number;
  block: number;
  error: number;
}

export const EMPTY_COUNTS: ArmCounts = { n: 0, intervention: 0, halt: 0, block: 0, error: 0 };

const COUNT_OF: Record<TriggerMetric, keyof ArmCounts> = { intervention_rate: 'intervention', halt_rate: 'halt', block_rate: 'block', error_rate: 'error' };

const TRIGGER_RE = /^\s*([a-z_]+?)(_delta)?\s*(>=|>)\s*(\d+(?:\.\d+)?)\s*(%?)\s*(?:over\s+(\S+))?\s*$/;

/** A trigger text → compiled trigger, 'manual', or an error message. */
export function compileTrigger(text: string): CompiledTrigger | 'manual' | { error: string } {
  if (text.trim() === 'manual_trigger') return 'manual';
  const m = TRIGGER_RE.exec(text);
  if (!m) return { error: `rollback trigger '${text}': expected '<metric>[_delta] > N% [over DURATION]' or 'manual_trigger'` };
  const metric = m[1] as TriggerMetric;
  if (!TRIGGER_METRICS.includes(metric)) return { error: `rollback trigger '${text}': unknown metric '${m[1]}' (one of ${TRIGGER_METRICS.join(', ')})` };
  const n = Number(m[4]);
  const threshold = m[5] === '%' ? n / 100 : n;
  if (!(threshold >= 0 && threshold <= 1)) return { error: `rollback trigger '${text}': threshold must be 0..100% (or a fraction 0..1)` };
  let windowMs: number | undefined;
  if (m[6] !== undefined) {
    windowMs = parseDuration(m[6]);
    if (windowMs === undefined || windowMs <= 0) return { error: `rollback trigger '${text}': bad window '${m[6]}' (e.g. 30s, 10m, 1h)` };
  }
  return { source: text.trim(), metric, delta: m[2] !== undefined, op: m[3] as '>' | '>=', threshold, windowMs };
}

export const rateOf = (c: ArmCounts, metric: TriggerMetric): number => (c.n === 0 ? 0 : c[COUNT_OF[metric]] / c.n);

export interface TriggerFiring {
  trigger: CompiledTrigger;
  canaryValue: number;
  stableValue: number;
}

/**
 * The first trigger that fires on these counts, if any. An arm with fewer than `minSamples` decisions in the
 * window says nothing yet (a single halted canary decision is not a 100 % halt rate); a delta trigger needs
 * both arms to have them.
 */
export function firingTrigger(triggers: readonly CompiledTrigger[], canary: ArmCounts, stable: ArmCounts, minSamples: number): TriggerFiring | undefined {
  for (const t of triggers) {
    if (canary.n < Math.max(1, minSamples)) continue;
    if (t.delta && stable.n < Math.max(1, minSamples)) continue;
    const c = rateOf(canary, t.metric);
    const s = rateOf(stable, t.metric);
    const v = t.delta ? c - s : c;
    // A tiny epsilon so 0.1 + 0.2 style float noise does not decide a `>=` at the boundary.
    if (t.op === '>' ? v > t.threshold + 1e-12 : v >= t.threshold - 1e-12) return { trigger: t, canaryValue: c, stableValue: s };
  }
  return undefined;
}

/** What one decision adds to its arm's counts. */
export function countsOf(d: { intervention: string; halted: boolean; degraded?: boolean; tripwires: readonly { error?: unknown }[]; rules: readonly { error?: unknown }[] }): ArmCounts {
  const error = d.degraded === true || d.tripwires.some((t) => t.error !== undefined) || d.rules.some((r) => r.error !== undefined);
  return {
    n: 1,
    intervention: d.intervention === 'ok' ? 0 : 1,
    halt: d.halted ? 1 : 0,
    block: d.intervention === 'block' || d.intervention === 'halt' ? 1 : 0,
    error: error ? 1 : 0,
  };
}
