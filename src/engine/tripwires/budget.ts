/**
 * Time for the tripwire stage: a monotonic clock and a one-shot timer, injected so tests drive them
 * deterministically (a fake clock) while production uses performance.now/setTimeout. The stage budget
 * is the agent tier's max latency (spec-decisions D3); a tripwire's own latency_budget_ms is capped by what
 * is left of it.
 */
import { StewardError } from '../../errors.js';
import { DEFAULT_TIERS, type TierSettings } from '../config.js';
import { mostSevere, severityRank, type AclTier, type FallbackOnTimeout, type Intervention, type TripwireStageResult } from '../types.js';

export interface StageTimer {
  /** Monotonic milliseconds; only differences are used. */
  now(): number;
  /** Calls `fn` once after `ms`; returns a function that cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export const REAL_TIMER: StageTimer = {
  now: () => performance.now(),
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

/** The whole stage's budget: an explicit value, else the tier's max (configured tiers, else spec-decisions D3 defaults). */
export function stageBudgetMs(tier: AclTier, tiers?: Record<AclTier, TierSettings>, explicit?: number): number {
  if (explicit !== undefined) return explicit;
  return (tiers?.[tier] ?? DEFAULT_TIERS[tier])?.latencyBudgetMs.max ?? Infinity;
}

/**
 * spec-decisions D5: tripwires (and the rules of the same stage, D11) fail closed when they cannot be
 * evaluated. The contract fallback may only make that stricter, never approved: escalate stays
 * escalate (a human decides), everything else (deny, allow_and_log, cached_decision, unset) blocks.
 * allow_and_log → flag would approve an action nobody checked (docs/spec-decisions.md).
 */
export function failClosedDecision(f: FallbackOnTimeout | undefined): Intervention {
  return f === 'escalate' ? 'escalate' : 'block';
}

export function timeoutError(message: string): StewardError {
  return new StewardError('STEWARD_STATE_TIMEOUT', message, { retryable: true });
}

/** Settles with `p`, or rejects with `onTimeout()` after `ms` on `timer`, whichever comes first. */
export function withBudget(p: Promise<boolean>, ms: number, timer: StageTimer, onTimeout: () => StewardError): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const cancel = timer.after(ms, () => reject(onTimeout()));
    p.then(
      (v) => {
        cancel();
        resolve(v);
      },
      (e: unknown) => {
        cancel();
        reject(e);
      },
    );
  });
}

/** Error codes of a dependency that was unavailable or too slow (not of the trace or the policy). */
const DEPENDENCY_CODES: ReadonlySet<string> = new Set(['STEWARD_STATE_UNAVAILABLE', 'STEWARD_STATE_OOM', 'STEWARD_STATE_TIMEOUT', 'STEWARD_SCORER_UNAVAILABLE', 'STEWARD_LLM_TIMEOUT', 'STEWARD_LLM_HTTP']);

export function isDependencyFailure(error: { code: string } | undefined): boolean {
  return error !== undefined && DEPENDENCY_CODES.has(error.code);
}

/**
 * spec-decisions D20: true when the stage's intervention is more severe than what its checks decided on their
 * own — the rest came from checks that failed closed because a dependency was unavailable.
 */
export function isDegraded(res: Pick<TripwireStageResult, 'intervention' | 'tripwires' | 'rules'>): boolean {
  if (res.intervention === 'ok') return false;
  let own: Intervention = 'ok';
  let forced = false;
  for (const t of res.tripwires) {
    if (!t.fired || !t.decision) continue;
    if (isDependencyFailure(t.error)) forced = true;
    else own = mostSevere(own, t.decision);
  }
  for (const r of res.rules) {
    if (r.passed || !r.decision) continue;
    if (isDependencyFailure(r.error)) forced = true;
    else own = mostSevere(own, r.decision);
  }
  return forced && severityRank(res.intervention) > severityRank(own);
}
