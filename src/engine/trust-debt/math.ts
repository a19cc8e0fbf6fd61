/**
 * Pure trust-debt math (ACGP-1004 §10.2–§10.6, spec-decisions D7/D15) and the per-agent state machine.
 * The Redis Lua script (src/adapters/redis/trust-debt-lua.ts) is a line-by-line transliteration of
 * `advance` and `detPow`: same operations in the same order, so both stores produce the same doubles.
 */
import type { Intervention, TrustDebtConfig, TrustDebtLevel } from '../types.js';

export const HOUR_MS = 3_600_000;

export type ThresholdName = 'elevated_monitoring' | 'restricted_mode' | 're_tiering_review';
export interface Crossing {
  threshold: ThresholdName;
  direction: 'up' | 'down';
}

export const LEVELS: readonly TrustDebtLevel[] = ['normal', 'elevated_monitoring', 'restricted_mode', 're_tiering_review'];
const LEVEL_RANK: Record<TrustDebtLevel, number> = { normal: 0, elevated_monitoring: 1, restricted_mode: 2, re_tiering_review: 3 };

/**
 * Every map keyed by something a user or a message chose (tripwire severity, an intervention read off
 * Kafka, a level read from storage) is read as an own property: `weights['constructor']` would otherwise
 * be Object.prototype's function and turn the debt into NaN.
 */
function ownNumber(o: Readonly<Record<string, number | undefined>>, key: string): number | undefined {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/** Rank of a level; anything that is not one of the four levels ranks as `normal`. */
function rankOf(level: string): number {
  return ownNumber(LEVEL_RANK, level) ?? 0;
}

/** §10.6: a threshold is reached at `debt >= threshold` (spec-decisions D6 says "≥"; §10.5's 0.75 example lands exactly on it). */
export function levelFor(debt: number, cfg: TrustDebtConfig): TrustDebtLevel {
  const t = cfg.thresholds;
  if (debt >= t.reTieringReview) return 're_tiering_review';
  if (debt >= t.restrictedMode) return 'restricted_mode';
  if (debt >= t.elevatedMonitoring) return 'elevated_monitoring';
  return 'normal';
}

export function levelRank(level: TrustDebtLevel): number {
  return rankOf(level);
}

/** Every threshold between two levels, in the order it is crossed. */
export function crossingsBetween(from: TrustDebtLevel, to: TrustDebtLevel): Crossing[] {
  const a = rankOf(from);
  const b = rankOf(to);
  const out: Crossing[] = [];
  if (b > a) for (let r = a + 1; r <= b; r++) out.push({ threshold: LEVELS[r] as ThresholdName, direction: 'up' });
  else for (let r = a; r > b; r--) out.push({ threshold: LEVELS[r] as ThresholdName, direction: 'down' });
  return out;
}

// ───────────────────────────── deterministic pow ─────────────────────────────
// V8's Math.pow and the C library's pow (what Redis Lua calls) differ in the last bit now and then, which
// would let `steward eval` and the stream disagree. detPow uses only + − × ÷ and floor, each correctly
// rounded IEEE-754 in both runtimes, in a fixed order; the Lua copy (trust-debt-lua.ts) repeats it, so
// both stores produce the same doubles. Accuracy: a few ulps (≈1e-15 relative), far below what debt needs.

const LN2 = 0.6931471805599453;
const SQRT2 = 1.4142135623730951;
const SQRT1_2 = 0.7071067811865476;

/** ln(x) for x > 0: x = m·2^k with m in [√½, √2), ln m = 2·atanh((m−1)/(m+1)) by a 14-term series. */
export function detLn(x: number): number {
  let m = x;
  let k = 0;
  while (m >= SQRT2) {
    m = m / 2;
    k = k + 1;
  }
  while (m < SQRT1_2) {
    m = m * 2;
    k = k - 1;
  }
  const s = (m - 1) / (m + 1);
  const s2 = s * s;
  let sum = 0;
  for (let i = 27; i >= 1; i = i - 2) sum = sum * s2 + 1 / i;
  return k * LN2 + 2 * s * sum;
}

/** e^y: y = n·ln2 + r with |r| ≤ ln2/2, e^r by an 18-term Horner series, then exact scaling by 2^n. */
export function detExp(y: number): number {
  if (y === 0) return 1;
  if (y < -745.2) return 0;
  if (y > 709.8) return Infinity;
  const n = Math.floor(y / LN2 + 0.5);
  const r = y - n * LN2;
  let sum = 1;
  for (let i = 18; i >= 1; i = i - 1) sum = 1 + (r * sum) / i;
  let p = sum;
  if (n < 0) for (let j = 0; j < -n; j = j + 1) p = p * 0.5;
  else for (let j = 0; j < n; j = j + 1) p = p * 2;
  return p;
}

/**
 * e^y − 1 without the cancellation of detExp(y) − 1 near 0 (the audit's (1 − Aⁱ)/(1 − A) with A ≈ 1):
 * for |y| < ln2/2 the series y·(1 + y/2·(1 + y/3·(…))) to 18 terms, else detExp(y) − 1. Same in Lua.
 */
export function detExpm1(y: number): number {
  if (y === 0) return 0;
  if (y > -0.34657359027997264 && y < 0.34657359027997264) {
    let sum = 1;
    for (let i = 18; i >= 2; i = i - 1) sum = 1 + (y * sum) / i;
    return y * sum;
  }
  return detExp(y) - 1;
}

/** base^x for base > 0, computed identically in TypeScript and Redis Lua. */
export function detPow(base: number, x: number): number {
  if (x === 0 || base === 1) return 1;
  return detExp(x * detLn(base));
}

// ───────────────────────────── precision ─────────────────────────────
// Debt is kept on a grid of 1e-12: in plain doubles ten flags (0.05 each) sum to 0.49999999999999994 and
// never reach restricted_mode 0.5, five blocks to 0.7499999999999999. Rounding every decayed and every
// combined value makes those sums exact and keeps `debt >= threshold` meaning what an author expects
// (thresholds themselves are compared unchanged). The operations (× 1e12, + 0.5, floor, ÷ 1e12) are
// correctly rounded IEEE-754 in V8 and in Lua, so the Redis script (trust-debt-lua.ts `q`) gets the same
// doubles. 1e-12 is far below anything debt means and far above the ~1e-16 error of the arithmetic.

export const DEBT_PRECISION = 1e12;

/** Nearest multiple of 1e-12 (halves up), as a double; idempotent and monotone. Same expression in Lua. */
export function roundDebt(x: number): number {
  return Math.floor(x * DEBT_PRECISION + 0.5) / DEBT_PRECISION;
}

/** §10.3: max(min_debt, debt · rate^(hours/period_hours)), on the 1e-12 grid. Negative elapsed time does not decay. */
export function applyDecay(debt: number, hoursElapsed: number, cfg: TrustDebtConfig): number {
  const decayed = hoursElapsed > 0 ? debt * detPow(cfg.decay.rate, hoursElapsed / cfg.decay.periodHours) : debt;
  return Math.max(cfg.decay.minDebt, roundDebt(decayed));
}

/** Decay between two instants in ms; the operation order here is the one the Lua script repeats. */
export function decayBetween(debt: number, fromMs: number, toMs: number, cfg: TrustDebtConfig): number {
  return applyDecay(debt, (toMs - fromMs) / HOUR_MS, cfg);
}

/**
 * §10.2 + §10.5: base debt of the intervention × the severity weight (standard when none, spec-decisions D15).
 * A severity without a weight counts 1.0 (§10.2 `severity_weights.get(severity, 1.0)`; the blueprint
 * compiler warns about it at load). An unknown intervention adds nothing.
 */
export function accumulationFor(intervention: Intervention, severity: string | undefined, cfg: TrustDebtConfig): number {
  const base = ownNumber(cfg.accumulation, intervention) ?? 0;
  if (base === 0) return 0;
  const weight = ownNumber(cfg.severityWeights, severity ?? 'standard') ?? 1.0;
  return base * weight;
}

/** §10.2 (cap at 1.0) generalised to credits (never below the floor): min(1, max(floor, decayed + delta)), on the 1e-12 grid. */
export function combine(decayed: number, delta: number, cfg: TrustDebtConfig): number {
  return Math.min(1, Math.max(cfg.decay.minDebt, roundDebt(decayed + delta)));
}

/** Credits are written negative in §10.4; a positive number given by a reviewer means the same credit. */
export function asCredit(n: number): number {
  return -Math.abs(n);
}

// ───────────────────────────── per-agent state machine ─────────────────────────────

/** What a store keeps per tenant+agent. `debt` is the value at `lastMs` (lazy decay). */
export interface AgentDebtState {
  debt: number;
  lastMs: number;
  /** Start of the current good-behaviour window: last non-ok intervention, last audit credit, or first event. */
  windowMs: number;
  /** The level last announced (so decay-driven down-crossings are reported at the next event). */
  level: TrustDebtLevel;
  lastAuditMs?: number;
  applied: number;
}

export interface StepInput {
  atMs: number;
  delta: number;
  /** A non-ok intervention: restarts the good-behaviour window (§10.4.2). */
  resetsWindow: boolean;
  /** Do not settle due audit windows first (TrustDebtEvent.deferAudits). */
  deferAudits?: boolean;
}

export interface StepChange {
  atMs: number;
  before: number;
  after: number;
  level: TrustDebtLevel;
  previousLevel: TrustDebtLevel;
  crossings: Crossing[];
}

export function initialState(atMs: number): AgentDebtState {
  return { debt: 0, lastMs: atMs, windowMs: atMs, level: 'normal', applied: 0 };
}

/**
 * A NaN debt can only be a leftover of the severity-lookup bug (a severity named `constructor` made the
 * increment NaN). Every decision read it as `normal` (all comparisons with NaN are false), so it is read
 * as the floor: the agent keeps the level it had and accumulates again. The Lua script does the same.
 */
function sane(s: AgentDebtState, cfg: TrustDebtConfig): AgentDebtState {
  return Number.isNaN(s.debt) ? { ...s, debt: cfg.decay.minDebt } : s;
}

/**
 * Whether the §10.4.2 good-behaviour audit runs (lazily and in the sweep): only when the blueprint
 * configures `recovery.good_behavior_audit` (compiled `thresholdHours` > 0; it is opt-in, see
 * DEFAULT_TRUST_DEBT_CONFIG) with a credit, and neither trust debt nor recovery is disabled.
 */
export function auditEnabled(cfg: TrustDebtConfig): boolean {
  const a = cfg.recovery.goodBehaviorAudit;
  return cfg.enabled && cfg.recovery.enabled && a.thresholdHours > 0 && a.credit < 0;
}

/**
 * §10.4.2 good-behaviour audit: every full `threshold_hours` without a non-ok intervention grants
 * `credit` at the moment the window completes (decay up to then, then the credit); once the debt is at
 * the floor the remaining windows complete without credit. Run lazily before an event and by the
 * periodic sweep; both advance `windowMs` past every window due, so a window is never credited twice.
 *
 * All windows due by `atMs` are settled in one step whose cost does not depend on how many there are
 * (a tiny `threshold_hours` over a long gap used to loop once per window — millions of iterations, in
 * the Redis script too). With A = rate^(window/period) = e^u, the first window's decayed debt b₁ and the
 * credit c < 0, the debt just before the credit of window i+1 is, while no credit has hit the floor,
 *   Z(i) = Aⁱ·b₁ + c·A·(1 − Aⁱ)/(1 − A)          (A = 1: b₁ + c·i)
 * Window i+1 is credited iff Z(i), on the 1e-12 grid like every debt, is above the floor (the loop's test
 * `before > floor`); Z decreases (each credit removes at least |c|), so the number
 * of credited windows is found by bisection over at most ⌊(b₁ − floor)/|c|⌋ + 1 candidates (≤ 53 steps).
 * The debt left is combine(Z(n − 1), c) — the loop's result, except that only this last value is rounded
 * to the 1e-12 grid (test/unit/engine/trust-debt/audit-closed-form.test.ts compares it with the loop).
 * (1 − Aⁱ)/(1 − A) uses expm1, so a window much shorter than the decay period loses no precision.
 *
 * The windows settled together are reported as one change, at the end of the last credited window:
 * `before` is the stored debt decayed to that moment without any credit, `after` the debt with them.
 * The Lua script (trust-debt-lua.ts) repeats these operations in this order.
 */
export function runAudits(prev: AgentDebtState, atMs: number, cfg: TrustDebtConfig): { state: AgentDebtState; changes: StepChange[] } {
  if (!auditEnabled(cfg)) return { state: prev, changes: [] };
  const s = sane(prev, cfg);
  const thr = cfg.recovery.goodBehaviorAudit.thresholdHours * HOUR_MS;
  const credit = cfg.recovery.goodBehaviorAudit.credit;
  const floor = cfg.decay.minDebt;
  const windows = Math.floor((atMs - s.windowMs) / thr); // whole windows completed by atMs
  if (!(windows >= 1)) return { state: s, changes: [] };
  const end = s.windowMs + windows * thr;
  const b1 = decayBetween(s.debt, s.lastMs, s.windowMs + thr, cfg);
  if (b1 <= floor) return { state: { ...s, windowMs: end, lastAuditMs: end }, changes: [] };

  const u = (thr / HOUR_MS / cfg.decay.periodHours) * detLn(cfg.decay.rate);
  const a = detExp(u);
  const em1u = detExpm1(u);
  const z = (i: number): number => {
    const g = u === 0 ? i : detExpm1(i * u) / em1u;
    return detExp(i * u) * b1 + credit * (a * g);
  };
  const credited = (i: number): boolean => roundDebt(z(i)) > floor;
  // largest i in [0, windows − 1] with window i+1 credited (Z(0) = b₁ > floor): windows 1..i+1 are credited
  let lo = 0;
  let hi = Math.min(windows - 1, Math.floor((b1 - floor) / -credit) + 1);
  if (hi > 0 && credited(hi)) lo = hi;
  else
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (credited(mid)) lo = mid;
      else hi = mid;
    }
  const pre = lo === 0 ? b1 : z(lo);
  const due = s.windowMs + (lo + 1) * thr;
  const before = decayBetween(s.debt, s.lastMs, due, cfg);
  const after = combine(pre, credit, cfg);
  const level = levelFor(after, cfg);
  const change: StepChange = { atMs: due, before, after, level, previousLevel: s.level, crossings: crossingsBetween(s.level, level) };
  return { state: { ...s, debt: after, lastMs: Math.max(s.lastMs, due), windowMs: end, level, lastAuditMs: end }, changes: [change] };
}

/** One event: pending audits, then decay to the event time, then the increment or credit (spec-decisions D15). */
export function advance(
  prev: AgentDebtState | undefined,
  input: StepInput,
  cfg: TrustDebtConfig,
): { state: AgentDebtState; audits: StepChange[]; change: StepChange } {
  const start = sane(prev ?? initialState(input.atMs), cfg);
  const { state: s, changes: audits } = input.deferAudits ? { state: start, changes: [] as StepChange[] } : runAudits(start, input.atMs, cfg);
  const before = decayBetween(s.debt, s.lastMs, input.atMs, cfg);
  const after = combine(before, input.delta, cfg);
  const level = levelFor(after, cfg);
  const change: StepChange = { atMs: input.atMs, before, after, level, previousLevel: s.level, crossings: crossingsBetween(s.level, level) };
  const state: AgentDebtState = {
    ...s,
    debt: after,
    lastMs: Math.max(s.lastMs, input.atMs),
    windowMs: input.resetsWindow ? Math.max(s.windowMs, input.atMs) : s.windowMs,
    level,
    applied: s.applied + 1,
  };
  return { state, audits, change };
}

/** Decayed read without a write: the debt an evaluation at `atMs` sees (pending audit credits included). */
export function debtAt(s: AgentDebtState | undefined, atMs: number, cfg: TrustDebtConfig): number {
  if (!s) return Math.max(cfg.decay.minDebt, 0);
  const { state } = runAudits(sane(s, cfg), atMs, cfg);
  return decayBetween(state.debt, state.lastMs, atMs, cfg);
}

// ───────────────────────────── threshold actions (§10.6) ─────────────────────────────

export interface LevelActions {
  /**
   * elevated_monitoring and above: every trace of the agent is scored fully — every metric whose `when`
   * matches is evaluated with a fresh scorer call (no cached or shared LLM judgement is reused); see
   * docs/spec-decisions.md (§10.6 full scoring).
   */
  fullScoring: boolean;
  /** Level of the per-trace log line: `info` from elevated_monitoring (increased logging, §10.6), else `debug`. */
  traceLogLevel: 'info' | 'debug';
  /** restricted_mode and above: stricter intervention thresholds (spec-decisions D6). */
  restricted: boolean;
  /** re_tiering_review: the agent is queued for ARS re-evaluation (the queue entry is made on the up-crossing). */
  reTieringReview: boolean;
}

export function levelActions(level: TrustDebtLevel): LevelActions {
  const r = rankOf(level);
  return { fullScoring: r >= 1, traceLogLevel: r >= 1 ? 'info' : 'debug', restricted: r >= 2, reTieringReview: r >= 3 };
}

/** The more severe of two levels. */
export function maxLevel(a: TrustDebtLevel, b: TrustDebtLevel): TrustDebtLevel {
  return rankOf(a) >= rankOf(b) ? a : b;
}
