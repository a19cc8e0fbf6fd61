/**
 * rule-based scorer (ACGP-1004 §7.2.1): binary over the rule checks and tripwires the tripwire stage
 * already evaluated, so no condition runs twice. A referenced rule whose `when` did not match the trace
 * was not at stake and counts as passing; a rule that could not be evaluated counts as failed (fail closed).
 */
import type { ScorerResult, Trace } from '../types.js';
import { strList, unavailable, type Scorer, type ScorerContext } from './types.js';

export class RuleBasedScorer implements Scorer {
  readonly scorerType = 'rule-based';
  readonly evalTier = 0 as const;
  readonly latencyBudgetMs = 10;

  async evaluate(_trace: Trace, parameters: Record<string, unknown>, ctx: ScorerContext): Promise<ScorerResult> {
    const t0 = performance.now();
    const mode = parameters.mode === 'any' ? 'any' : 'all';
    const known = new Set([...ctx.blueprint.rules.map((r) => r.id), ...ctx.blueprint.tripwires.map((t) => t.id)]);
    const wanted = strList(parameters.rules);
    const ids = wanted.length > 0 ? wanted : [...ctx.blueprint.rules.map((r) => r.id)];
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) throw unavailable(`rule-based: unknown rule id(s) ${unknown.join(', ')}`);
    if (!ctx.decision) throw unavailable('rule-based: no tripwire stage result to read');

    const outcome = new Map<string, boolean>();
    for (const r of ctx.decision.rules) outcome.set(r.id, r.passed && !r.error);
    for (const t of ctx.decision.tripwires) outcome.set(t.id, !t.fired && !t.error);
    const evaluated = ids.filter((id) => outcome.has(id));
    const passed = evaluated.filter((id) => outcome.get(id) === true);
    const failed = evaluated.filter((id) => outcome.get(id) === false);
    let ok: boolean;
    if (evaluated.length === 0) ok = true;
    else ok = mode === 'all' ? failed.length === 0 : passed.length > 0;
    return {
      score: ok ? 1 : 0,
      confidence: 1,
      explanation:
        evaluated.length === 0
          ? 'no referenced rule applied to this trace'
          : ok
            ? `rules passed (${mode}): ${passed.join(', ')}`
            : `rules failed (${mode}): ${failed.join(', ')}`,
      evidence: { mode, passed, failed, not_applicable: ids.filter((id) => !outcome.has(id)) },
      latencyMs: performance.now() - t0,
    };
  }
}
