/**
 * Parses a condition in either written form: a string expression, or the YAML-structured
 * `{all: [...]}` / `{any: [...]}` / `{NOT: ...}` objects nested within limits. Problems are collected
 * per string item so authors see every malformed item at once.
 */
import type { DslLimits, DslProblem, Node } from './ast.js';
import { parseExpression, ParseFailure, type ParseBudget } from './parser.js';

export interface ParsedCondition {
  node?: Node;
  problems: DslProblem[];
}

const KEYS: Record<string, 'all' | 'any' | 'not'> = { all: 'all', ALL: 'all', any: 'any', ANY: 'any', NOT: 'not', not: 'not', Not: 'not' };

export function parseCondition(cond: unknown, limits: DslLimits): ParsedCondition {
  const problems: DslProblem[] = [];
  const budget: ParseBudget = { limits, nodes: 0 };
  const node = parseAt(cond, '', 0, budget, problems);
  return problems.length > 0 ? { problems } : { node, problems };
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function parseAt(cond: unknown, path: string, depth: number, budget: ParseBudget, problems: DslProblem[]): Node | undefined {
  if (depth > budget.limits.maxDepth) {
    problems.push({ code: 'STEWARD_DSL_LIMIT', message: `condition nested deeper than ${budget.limits.maxDepth} levels`, path });
    return undefined;
  }
  if (typeof cond === 'string') {
    if (cond.trim() === '') {
      problems.push({ code: 'STEWARD_DSL_PARSE', message: 'empty condition', path, offset: 0 });
      return undefined;
    }
    try {
      return parseExpression(cond, path, budget, depth);
    } catch (e) {
      if (e instanceof ParseFailure) {
        problems.push({ code: e.code, message: e.message, path, offset: e.offset });
        return undefined;
      }
      if (e instanceof RangeError) {
        // Defence in depth: the depth limit should make this unreachable.
        problems.push({ code: 'STEWARD_DSL_LIMIT', message: 'condition too deeply nested', path, offset: 0 });
        return undefined;
      }
      throw e;
    }
  }
  if (typeof cond === 'boolean') {
    budget.nodes++;
    return { kind: 'literal', value: cond, path, offset: -1 };
  }
  if (cond === null || typeof cond !== 'object' || Array.isArray(cond)) {
    const what = Array.isArray(cond) ? 'a list (wrap it in all: or any:)' : cond === null ? 'null' : typeof cond;
    problems.push({ code: 'STEWARD_DSL_PARSE', message: `a condition must be a string expression or an all:/any:/NOT: object, not ${what}`, path });
    return undefined;
  }
  const keys = Object.keys(cond);
  if (keys.length !== 1 || KEYS[keys[0]!] === undefined) {
    problems.push({
      code: 'STEWARD_DSL_PARSE',
      message: keys.length === 1 ? `unknown compound key '${keys[0]}' (use all, any or NOT)` : `a compound condition has exactly one key (all, any or NOT), found ${keys.length}`,
      path,
    });
    return undefined;
  }
  const key = keys[0]!;
  const kind = KEYS[key]!;
  const value = (cond as Record<string, unknown>)[key];
  const here = join(path, key);
  if (++budget.nodes > budget.limits.maxNodes) {
    problems.push({ code: 'STEWARD_DSL_LIMIT', message: `condition has more than ${budget.limits.maxNodes} nodes`, path: here });
    return undefined;
  }
  if (kind === 'not') {
    const operand = parseAt(value, here, depth + 1, budget, problems);
    return operand && { kind: 'not', operand, path: here, offset: -1 };
  }
  if (!Array.isArray(value) || value.length === 0) {
    problems.push({ code: 'STEWARD_DSL_PARSE', message: `'${key}' needs a non-empty list of conditions`, path: here });
    return undefined;
  }
  if (value.length > budget.limits.maxNodes) {
    problems.push({ code: 'STEWARD_DSL_LIMIT', message: `condition has more than ${budget.limits.maxNodes} nodes`, path: here });
    return undefined;
  }
  const items: Node[] = [];
  let ok = true;
  for (let i = 0; i < value.length; i++) {
    const item = parseAt(value[i], `${here}[${i}]`, depth + 1, budget, problems);
    if (item) items.push(item);
    else ok = false;
    // Once the node budget is gone, further items would only repeat the same limit problem.
    if (budget.nodes > budget.limits.maxNodes) break;
  }
  return ok ? { kind, items, path: here, offset: -1 } : undefined;
}

/** Canonical one-line rendering in the ABNF's inline form, for messages and `source`. */
export function renderCondition(cond: unknown, depth = 0): string {
  if (depth > 64) return '…';
  if (typeof cond === 'string') return cond;
  if (typeof cond === 'boolean') return String(cond);
  if (cond !== null && typeof cond === 'object' && !Array.isArray(cond)) {
    const [key] = Object.keys(cond);
    if (key !== undefined) {
      const v = (cond as Record<string, unknown>)[key];
      if (KEYS[key] === 'not') return `NOT (${renderCondition(v, depth + 1)})`;
      if (Array.isArray(v)) return `${key.toLowerCase()}: [${v.map((x) => renderCondition(x, depth + 1)).join(', ')}]`;
    }
  }
  return JSON.stringify(cond) ?? String(cond);
}
