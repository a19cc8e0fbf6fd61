/**
 * The tripwire stage (ACGP-1004 §9.2, §6.2): tripwires in order (halt short-circuits everything
 * after it), then the rule checks whose `when` matches. The result is synchronous unless a condition
 * is async (state lookups). The agent tier's max latency (spec-decisions D3) bounds the whole stage: an async
 * condition races its own budget capped by what is left of the stage's, and once the stage budget is
 * spent pending conditions are not awaited. Any condition that cannot be evaluated fails closed
 * (spec-decisions D5, D11): block, or escalate when the contract says so — never an approved outcome.
 */
import { StewardError, type StewardErrorCode } from '../../errors.js';
import type { TierSettings } from '../config.js';
import { STATEFUL_FUNCTIONS } from '../dsl/functions.js';
import {
  severityRank,
  type AclTier,
  type CompiledBlueprint,
  type CompiledCondition,
  type CompiledRule,
  type CompiledTripwire,
  type EvalContext,
  type FallbackOnTimeout,
  type Intervention,
  type TripwireSeverity,
  type TripwireStageResult,
} from '../types.js';
import { failClosedDecision, REAL_TIMER, stageBudgetMs, timeoutError, withBudget, type StageTimer } from './budget.js';


export interface TripwireStageOptions {
  /** Governance-contract fallback; only `escalate` changes the fail-closed block (failClosedDecision). */
  fallbackOnTimeout?: FallbackOnTimeout;
  /** Budget for async rule conditions (rules have no latency_budget_ms of their own). Default 300. */
  ruleLatencyBudgetMs?: number;
  /** Tier settings whose `latencyBudgetMs.max` for ctx.agent.tier bounds the stage; default spec-decisions D3. */
  tiers?: Record<AclTier, TierSettings>;
  /** Explicit stage budget in ms (instead of the tier's). */
  stageBudgetMs?: number;
  /** Clock and timer for budgets and latencies; default performance.now/setTimeout. */
  timer?: StageTimer;
}

/** §9.1 defaults of latency_budget_ms per eval_tier. */
export const DEFAULT_TRIPWIRE_BUDGET_MS = { 0: 100, 1: 300 } as const;

export interface TripwireTierProblem {
  code: StewardErrorCode;
  message: string;
}

/**
 * Load-time checks for one tripwire (§9.1, §9.2.4): eval_tier is 0 or 1, and a condition that
 * touches state (exceeds_rate, storage.get) must declare eval_tier 1. requires_state is implied by
 * the condition (docs/spec-decisions.md, Blueprints §9.2), so it is not checked.
 */
export function checkTripwireTier(t: { id: string; evalTier: number; requiresState?: boolean; condition: CompiledCondition }): TripwireTierProblem[] {
  const out: TripwireTierProblem[] = [];
  if (t.evalTier !== 0 && t.evalTier !== 1) out.push({ code: 'STEWARD_BLUEPRINT_TIER', message: `tripwire '${t.id}': eval_tier must be 0 or 1, found ${t.evalTier}` });
  const stateful = [...t.condition.functions].filter((f) => STATEFUL_FUNCTIONS.has(f));
  if (stateful.length > 0) {
    if (t.evalTier === 0) out.push({ code: 'STEWARD_BLUEPRINT_TIER', message: `tripwire '${t.id}': ${stateful.join(', ')} needs state; set eval_tier: 1 (tier 0 is in-memory only)` });
  }
  return out;
}

type Result = TripwireStageResult | Promise<TripwireStageResult>;

export function runTripwireStage(bp: CompiledBlueprint, ctx: EvalContext, opts?: TripwireStageOptions): Result {
  const timer = opts?.timer ?? REAL_TIMER;
  const t0 = timer.now();
  const res: TripwireStageResult = {
    traceId: ctx.trace.trace_id,
    agentId: ctx.trace.agent_id,
    blueprint: bp.id,
    intervention: 'ok',
    stage: 'none',
    halted: false,
    tripwires: [],
    rules: [],
    reasons: [],
    severity: undefined,
    latencyMs: 0,
  };
  const budget = stageBudgetMs(ctx.agent.tier, opts?.tiers, opts?.stageBudgetMs);
  const run: Run = {
    bp,
    ctx,
    res,
    timer,
    t0,
    last: t0,
    deadline: t0 + budget,
    budgetMs: budget,
    budgetFromTier: opts?.stageBudgetMs === undefined,
    fallback: failClosedDecision(opts?.fallbackOnTimeout ?? bp.fallbackOnTimeout),
    ruleBudget: opts?.ruleLatencyBudgetMs ?? 300,
  };
  return tripwiresFrom(run, 0);
}

interface Run {
  bp: CompiledBlueprint;
  ctx: EvalContext;
  res: TripwireStageResult;
  timer: StageTimer;
  t0: number;
  /** End of the previous evaluated item: one clock read per item (the clock is the main per-item cost). */
  last: number;
  /** t0 + the stage budget: async conditions pending after this are not awaited. */
  deadline: number;
  budgetMs: number;
  budgetFromTier: boolean;
  fallback: Intervention;
  ruleBudget: number;
}

function finish(run: Run): TripwireStageResult {
  run.res.latencyMs = run.timer.now() - run.t0;
  return run.res;
}

/** Latency of the item that just finished: since the previous item ended (includes its `when` check). */
function lap(run: Run): number {
  const now = run.timer.now();
  const d = now - run.last;
  run.last = now;
  return d;
}

/**
 * Waits for an async condition at most min(own budget, what is left of the stage budget). With the
 * stage budget already spent it is not awaited at all (its late result or error is dropped).
 * Sync conditions are in-memory and never cut short; they only use up the budget.
 */
// Built only when a budget runs out: the per-decision hot path allocates nothing for it.
const budgetText = (run: Run): string => `the tripwire stage budget of ${run.budgetMs} ms${run.budgetFromTier ? ` (${run.ctx.agent.tier} max)` : ''}`;

function budgeted(run: Run, p: Promise<boolean>, id: string, ownMs: number): Promise<boolean> {
  const left = run.deadline - run.timer.now();
  if (!(left > 0)) {
    p.then(undefined, () => undefined);
    return Promise.reject(timeoutError(`'${id}' not awaited: ${budgetText(run)} is spent`));
  }
  const capped = left < ownMs;
  return withBudget(p, capped ? left : ownMs, run.timer, () =>
    timeoutError(capped ? `'${id}' timed out: ${budgetText(run)} ran out` : `'${id}' exceeded its latency budget of ${ownMs} ms`),
  );
}

function tripwiresFrom(run: Run, from: number): Result {
  const tws = run.bp.tripwires;
  const trace = run.ctx.trace;
  for (let i = from; i < tws.length; i++) {
    const tw = tws[i]!;
    if (!tw.when(trace)) continue;
    let r: boolean | Promise<boolean>;
    try {
      r = tw.condition.evaluate(run.ctx);
    } catch (e) {
      tripwireError(run, tw, e);
      continue;
    }
    if (r instanceof Promise) {
      return budgeted(run, r, tw.id, tw.latencyBudgetMs).then(
        (v) => {
          tripwireResult(run, tw, v);
          return run.res.halted ? finish(run) : tripwiresFrom(run, i + 1);
        },
        (e: unknown) => {
          tripwireError(run, tw, e);
          return tripwiresFrom(run, i + 1);
        },
      );
    }
    tripwireResult(run, tw, r);
    if (run.res.halted) return finish(run);
  }
  return rulesFrom(run, 0);
}

function rulesFrom(run: Run, from: number): Result {
  const rules = run.bp.rules;
  const trace = run.ctx.trace;
  for (let i = from; i < rules.length; i++) {
    const rule = rules[i]!;
    if (!rule.when(trace)) continue;
    let r: boolean | Promise<boolean>;
    try {
      r = rule.condition.evaluate(run.ctx);
    } catch (e) {
      ruleError(run, rule, e);
      continue;
    }
    if (r instanceof Promise) {
      return budgeted(run, r, rule.id, run.ruleBudget).then(
        (v) => {
          ruleResult(run, rule, v);
          return rulesFrom(run, i + 1);
        },
        (e: unknown) => {
          ruleError(run, rule, e);
          return rulesFrom(run, i + 1);
        },
      );
    }
    ruleResult(run, rule, r);
  }
  return finish(run);
}

function apply(res: TripwireStageResult, d: Intervention, reason: string, stage: 'tripwire' | 'rule', severity: TripwireSeverity | undefined): void {
  if (d !== 'ok') res.reasons.push(reason);
  // Ties keep the earlier source, so a tripwire wins over a rule with the same decision.
  if (severityRank(d) > severityRank(res.intervention)) {
    res.intervention = d;
    res.stage = stage;
    res.severity = severity;
  }
}

function tripwireResult(run: Run, tw: CompiledTripwire, holds: boolean): void {
  const latencyMs = lap(run);
  // The condition is an invariant (spec-decisions D11): only an exact `true` passes.
  if (holds === true) {
    run.res.tripwires.push({ id: tw.id, fired: false, latencyMs });
    return;
  }
  const d = tw.onFail.decision;
  run.res.tripwires.push({ id: tw.id, fired: true, decision: d, reason: tw.onFail.reason, severity: tw.severity, latencyMs });
  apply(run.res, d, tw.onFail.reason, 'tripwire', tw.severity);
  if (d === 'halt') run.res.halted = true;
}

function errorInfo(e: unknown): { code: string; message: string } {
  if (e instanceof StewardError) return { code: e.code, message: e.message };
  return { code: 'STEWARD_DSL_EVAL', message: e instanceof Error ? e.message : String(e) };
}

function tripwireError(run: Run, tw: CompiledTripwire, e: unknown): void {
  const error = errorInfo(e);
  const d = run.fallback;
  const reason = notEvaluable(tw.onFail.reason, error, d);
  run.res.tripwires.push({ id: tw.id, fired: true, decision: d, reason, severity: tw.severity, error, latencyMs: lap(run) });
  apply(run.res, d, reason, 'tripwire', tw.severity);
}

function notEvaluable(reason: string, error: { code: string; message: string }, d: Intervention): string {
  return `${reason} (not evaluable: ${error.code}: ${error.message}; fails closed: ${d})`;
}

function ruleDecision(rule: CompiledRule): Intervention {
  // halt comes only from tripwires (spec-decisions D1).
  return rule.onFail.decision === 'halt' ? 'block' : rule.onFail.decision;
}

function ruleResult(run: Run, rule: CompiledRule, holds: boolean): void {
  const latencyMs = lap(run);
  if (holds === true) {
    run.res.rules.push({ id: rule.id, passed: true, latencyMs });
    return;
  }
  const d = ruleDecision(rule);
  run.res.rules.push({ id: rule.id, passed: false, decision: d, reason: rule.onFail.reason, latencyMs });
  apply(run.res, d, rule.onFail.reason, 'rule', undefined);
}

function ruleError(run: Run, rule: CompiledRule, e: unknown): void {
  const error = errorInfo(e);
  const d = run.fallback;
  const reason = notEvaluable(rule.onFail.reason, error, d);
  run.res.rules.push({ id: rule.id, passed: false, decision: d, reason, error, latencyMs: lap(run) });
  apply(run.res, d, reason, 'rule', undefined);
}
