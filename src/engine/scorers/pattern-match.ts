/**
 * pattern-match scorer (ACGP-1004 §7.2.4). Patterns come from blueprints, so they run on RE2 (linear
 * time); they are compiled once per parameters object (compiled blueprints keep the same object).
 */
import { RE2JS } from 're2js';
import { StewardError } from '../../errors.js';
import type { ScorerResult, Trace } from '../types.js';
import { clamp01, num, strList, type Scorer } from './types.js';

interface CompiledPattern {
  source: string;
  re: RE2JS;
  onMatch: number;
  onMiss: number;
}
interface CompiledParams {
  patterns: CompiledPattern[];
  aggregation: 'min' | 'max' | 'avg';
  fields: string[];
}

const cache = new WeakMap<object, CompiledParams>();

export function compilePatternParams(parameters: Record<string, unknown>): CompiledParams {
  const hit = cache.get(parameters);
  if (hit) return hit;
  const raw = Array.isArray(parameters.patterns) ? parameters.patterns : [];
  const caseInsensitive = parameters.case_insensitive === true;
  const patterns: CompiledPattern[] = raw.map((p, i) => {
    const o = (typeof p === 'string' ? { pattern: p } : p) as Record<string, unknown>;
    if (typeof o?.pattern !== 'string') {
      throw new StewardError('STEWARD_DSL_REGEX', `pattern-match: patterns[${i}].pattern must be a string`);
    }
    let re: RE2JS;
    try {
      re = RE2JS.compile(o.pattern, caseInsensitive || o.case_insensitive === true ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (e) {
      throw new StewardError('STEWARD_DSL_REGEX', `pattern-match: invalid RE2 pattern '${o.pattern}': ${(e as Error).message}`, { cause: e });
    }
    // Defaults make a bare pattern a detector: a match is bad (0), a miss is fine (1).
    return { source: o.pattern, re, onMatch: clamp01(num(o.score_on_match, 0)), onMiss: clamp01(num(o.score_on_miss, 1)) };
  });
  const agg = parameters.aggregation;
  const fields = strList(parameters.fields ?? parameters.field);
  const compiled: CompiledParams = {
    patterns,
    aggregation: agg === 'max' || agg === 'avg' ? agg : 'min',
    // By default scan what the agent produced: its text and, for tool calls, the arguments.
    fields: fields.length > 0 ? fields : ['content', 'reasoning', 'args', 'action'],
  };
  cache.set(parameters, compiled);
  return compiled;
}

function fieldText(trace: Trace, path: string): string {
  let cur: unknown = trace;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'string' ? cur : JSON.stringify(cur);
}

export class PatternMatchScorer implements Scorer {
  readonly scorerType = 'pattern-match';
  readonly evalTier = 0 as const;
  readonly latencyBudgetMs = 50;

  async evaluate(trace: Trace, parameters: Record<string, unknown>): Promise<ScorerResult> {
    const t0 = performance.now();
    const p = compilePatternParams(parameters);
    const text = p.fields.map((f) => fieldText(trace, f)).filter((s) => s.length > 0).join('\n');
    const matched: string[] = [];
    const scores = p.patterns.map((pat) => {
      const m = pat.re.test(text);
      if (m) matched.push(pat.source);
      return m ? pat.onMatch : pat.onMiss;
    });
    let score = 1;
    if (scores.length > 0) {
      if (p.aggregation === 'min') score = Math.min(...scores);
      else if (p.aggregation === 'max') score = Math.max(...scores);
      else score = scores.reduce((a, b) => a + b, 0) / scores.length;
    }
    return {
      score,
      confidence: 1,
      explanation: matched.length > 0 ? `matched ${matched.length} of ${scores.length} pattern(s)` : `no pattern matched (${scores.length} checked)`,
      evidence: { matched, aggregation: p.aggregation, fields: p.fields },
      latencyMs: performance.now() - t0,
    };
  }
}
