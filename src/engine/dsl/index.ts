/**
 * Condition DSL (ACGP-1004 §9.4): parse → compile → evaluate. `compileCondition` accepts both written
 * forms and returns every problem it can find with a path and an offset; the result evaluates
 * synchronously unless a stateful function is used.
 */
import type { EngineConfig } from '../config.js';
import type { CompiledCondition, EvalContext } from '../types.js';
import { DEFAULT_DSL_LIMITS, type DslLimits, type DslProblem } from './ast.js';
import type { CompileEnv } from './builtins.js';
import { compileBool } from './compiler.js';
import type { FunctionRegistry } from './functions.js';
import { createNetworkMatcher, type NetworkMatcher } from './network.js';
import { BUILTIN_PATTERNS } from './patterns.js';
import { parseCondition, renderCondition } from './structured.js';

export type { DslLimits, DslProblem } from './ast.js';
export { DEFAULT_DSL_LIMITS } from './ast.js';
export { FunctionRegistry, BUILTIN_FUNCTIONS, STATEFUL_FUNCTIONS, type DslFunction, type DslParam, type DslType } from './functions.js';
export { compileWhen } from './when.js';
export { ENTITY_TYPES, ENTITY_DETECTORS, type EntityType } from './entities.js';
export { BUILTIN_PATTERNS } from './patterns.js';
export { createNetworkMatcher, type NetworkMatcher } from './network.js';
export { parseDuration } from './literals.js';
export { renderCondition } from './structured.js';

export interface DslCompileOptions {
  lists: Record<string, string[]>;
  internalDomains: string[];
  internalCidrs: string[];
  namedPatterns: Record<string, string>;
  functions?: FunctionRegistry;
  limits?: Partial<DslLimits>;
}

export interface CompileConditionResult {
  condition?: CompiledCondition;
  problems: DslProblem[];
}

/** Steward config lists and patterns, with the blueprint's `lists:` block on top (DESIGN §5.9). */
export function dslOptionsFromConfig(config: EngineConfig, blueprintLists?: Record<string, string[]>, functions?: FunctionRegistry): DslCompileOptions {
  return {
    lists: { ...config.lists, ...(blueprintLists ?? {}) },
    internalDomains: config.internalDomains,
    internalCidrs: config.internalCidrs,
    namedPatterns: config.namedPatterns,
    functions,
  };
}

interface SharedEnv {
  network?: { matcher: NetworkMatcher; invalid: string[] };
  listCache: CompileEnv['listCache'];
  regexCache: CompileEnv['regexCache'];
  patterns: Record<string, string>;
}

// Conditions compiled with the same options object share list sets, regexes and the CIDR table.
const shared = new WeakMap<DslCompileOptions, SharedEnv>();

function sharedFor(opts: DslCompileOptions): SharedEnv {
  let s = shared.get(opts);
  if (!s) {
    s = { listCache: new Map(), regexCache: new Map(), patterns: { ...BUILTIN_PATTERNS, ...opts.namedPatterns } };
    shared.set(opts, s);
  }
  return s;
}

export function compileCondition(cond: unknown, opts: DslCompileOptions): CompileConditionResult {
  const limits: DslLimits = { ...DEFAULT_DSL_LIMITS, ...(opts.limits ?? {}) };
  const parsed = parseCondition(cond, limits);
  if (!parsed.node) return { problems: parsed.problems };
  const s = sharedFor(opts);
  const problems: DslProblem[] = [];
  let reportedCidrs = false;
  const env: CompileEnv = {
    problems,
    functions: new Set(),
    lists: opts.lists,
    listCache: s.listCache,
    network: () => {
      if (!s.network) s.network = createNetworkMatcher(opts.internalDomains, opts.internalCidrs);
      if (!reportedCidrs) {
        reportedCidrs = true;
        for (const c of s.network.invalid) problems.push({ code: 'STEWARD_CONFIG', message: `invalid internal CIDR '${c}' in the steward config`, path: '' });
      }
      return s.network.matcher;
    },
    patterns: s.patterns,
    registry: opts.functions,
    regexCache: s.regexCache,
  };
  const root = compileBool(parsed.node, env);
  if (problems.length > 0) return { problems };
  const fn = root.fn as (ctx: EvalContext) => boolean | Promise<boolean>;
  const condition: CompiledCondition = {
    source: renderCondition(cond),
    async: root.async,
    functions: env.functions,
    evaluate: fn,
  };
  return { condition, problems };
}
