/**
 * hybrid scorer (ACGP-1004 §7.2.5): combines sub-scorers. Sub-scorers that are skipped (not
 * configured) drop out and the weights renormalise; one that is unavailable makes the whole metric
 * unavailable, because min/weighted results without it would overstate quality.
 * The §7.1 shorthand `{rule_weight, llm_weight}` means rule-based (parameters.rules) + llm-judge.
 */
import type { ScorerResult, Trace } from '../types.js';
import { clamp01, isSkipped, num, skipped, type Scorer, type ScorerContext } from './types.js';

interface Part {
  type: string;
  weight: number;
  parameters: Record<string, unknown>;
}

const partsCache = new WeakMap<object, Part[]>();

function partsOf(p: Record<string, unknown>): Part[] {
  const hit = partsCache.get(p);
  if (hit) return hit;
  let parts: Part[];
  if (Array.isArray(p.scorers)) {
    parts = p.scorers.map((raw) => {
      const o = raw as Record<string, unknown>;
      return {
        type: String(o.type ?? o.scorer ?? ''),
        // a negative or non-finite weight would push the weighted average out of 0..1
        weight: Math.max(0, num(o.weight, 1)),
        parameters: (o.parameters ?? o.args ?? {}) as Record<string, unknown>,
      };
    });
  } else {
    parts = [
      { type: 'rule-based', weight: Math.max(0, num(p.rule_weight, 0.5)), parameters: { rules: p.rules, mode: p.mode } },
      { type: 'llm-judge', weight: Math.max(0, num(p.llm_weight, 0.5)), parameters: { ...p } },
    ];
  }
  partsCache.set(p, parts);
  return parts;
}

export class HybridScorer implements Scorer {
  readonly scorerType = 'hybrid';
  readonly evalTier = 2 as const;
  readonly latencyBudgetMs = 3000;

  async evaluate(trace: Trace, parameters: Record<string, unknown>, ctx: ScorerContext): Promise<ScorerResult> {
    const t0 = performance.now();
    const parts = partsOf(parameters);
    const settled = await Promise.allSettled(
      parts.map((part) => ctx.registry.resolve(part.type, part.parameters).evaluate(trace, part.parameters, ctx)),
    );
    const answered: { part: Part; r: ScorerResult }[] = [];
    for (let i = 0; i < parts.length; i++) {
      const s = settled[i];
      if (s.status === 'fulfilled') answered.push({ part: parts[i], r: s.value });
      else if (!isSkipped(s.reason)) throw s.reason;
    }
    if (answered.length === 0) throw skipped('hybrid: every component is skipped');
    const agg = parameters.aggregation === 'min' || parameters.aggregation === 'max' ? parameters.aggregation : 'weighted_average';
    const scores = answered.map((a) => a.r.score);
    const totalW = answered.reduce((a, b) => a + b.part.weight, 0) || 1;
    const score =
      agg === 'min'
        ? Math.min(...scores)
        : agg === 'max'
          ? Math.max(...scores)
          : answered.reduce((acc, a) => acc + a.part.weight * a.r.score, 0) / totalW;
    const confidence = answered.reduce((acc, a) => acc + a.part.weight * a.r.confidence, 0) / totalW;
    return {
      score: clamp01(score),
      confidence: clamp01(confidence),
      explanation: answered.map((a) => `${a.part.type}=${a.r.score.toFixed(2)}`).join(', '),
      evidence: { aggregation: agg, components: answered.map((a) => ({ type: a.part.type, weight: a.part.weight, score: a.r.score })) },
      latencyMs: performance.now() - t0,
    };
  }
}
