/**
 * The tripwire stage (ACGP-1004 §9.2, §6.2): tripwires in order (halt short-circuits everything
 * after it), then the rule checks whose `when` matches. The result is synchronous unless a condition
 * is async (state lookups); async conditions race their latency budget and, like any condition that
 * cannot be evaluated, fail closed through the governance-contract fallback (DESIGN §5.5).
 */
import { StewardError, type StewardErrorCode } from '../../errors.js';
import { STATEFUL_FUNCTIONS } from '../dsl/functions.js';
import {
  severityRank,
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

export interface TripwireStageOptions {
  /** Governance-contract fallback for conditions that time out or fail; default deny (block). */
  fallbackOnTimeout?: FallbackOnTimeout;
  /** Budget for async rule conditions (rules have no latency_budget_ms of their own). Default 300. */
  ruleLatencyBudgetMs?: number;
}

export const DEFAULT_TRIPWIRE_BUDGET_MS = { 0: 100, 1: 300 } as const;

/** deny→block, escalate→escalate, allow_and_log→flag; cached_decision has no cache yet → block. */
export function fallbackDecision(f: FallbackOnTimeout | undefined): Intervention {
  switch (f) {
    case 'escalate':
      return 'escalate';
    case 'allow_and_log':
      return 'flag';
    default:
      return 'block';
  }
}

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
  const t0 = performance.now();
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
  const run: Run = { bp, ctx, res, t0, last: t0, fallback: fallbackDecision(opts?.fallbackOnTimeout ?? bp.fallbackOnTimeout), ruleBudget: opts?.ruleLatencyBudgetMs ?? 300 };
  return tripwiresFrom(run, 0);
}

interface Run {
  bp: CompiledBlueprint;
  ctx: EvalContext;
  res: TripwireStageResult;
  t0: number;
  /** End of the previous evaluated item: one clock read per item (the clock is the main per-item cost). */
  last: number;
  fallback: Intervention;
  ruleBudget: number;
}

function finish(run: Run): TripwireStageResult {
  run.res.latencyMs = performance.now() - run.t0;
  return run.res;
}

/** Latency of the item that just finished: since the previous item ended (includes its `when` check). */
function lap(run: Run): number {
  const now = performance.now();
  const d = now - run.last;
  run.last = now;
  return d;
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
      return withBudget(r, tw.latencyBudgetMs, tw.id).then(
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
      return withBudget(r, run.ruleBudget, rule.id).then(
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
  // The condition is an invariant (DESIGN §5.11): only an exact `true` passes.
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
  const reason = `${tw.onFail.reason} (not evaluable: ${error.code}; fallback ${d})`;
  run.res.tripwires.push({ id: tw.id, fired: true, decision: d, reason, severity: tw.severity, error, latencyMs: lap(run) });
  apply(run.res, d, reason, 'tripwire', tw.severity);
}

function ruleDecision(rule: CompiledRule): Intervention {
  // halt comes only from tripwires (DESIGN §5.1).
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
  const reason = `${rule.onFail.reason} (not evaluable: ${error.code}; fallback ${d})`;
  run.res.rules.push({ id: rule.id, passed: false, decision: d, reason, error, latencyMs: lap(run) });
  apply(run.res, d, reason, 'rule', undefined);
}

function withBudget(p: Promise<boolean>, ms: number, id: string): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StewardError('STEWARD_STATE_TIMEOUT', `'${id}' exceeded its latency budget of ${ms} ms`, { retryable: true })), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
