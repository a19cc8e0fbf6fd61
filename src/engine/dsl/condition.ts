/**
 * compileCondition: parse → compile of one condition in either written form, with its options.
 * Separate from index.ts so modules inside the DSL (guard.ts) can use it without an import cycle.
 */
import type { EngineConfig } from '../config.js';
import type { CompiledCondition, EvalContext } from '../types.js';
import { DEFAULT_DSL_LIMITS, type DslLimits, type DslProblem } from './ast.js';
import type { CompileEnv } from './compile-types.js';
import { compileBool } from './compiler.js';
import type { FunctionRegistry } from './functions.js';
import { createNetworkMatcher, type NetworkMatcher } from './network.js';
import { BUILTIN_PATTERNS } from './patterns.js';
import { parseCondition, renderCondition } from './structured.js';

export interface DslCompileOptions {
  lists: Record<string, string[]>;
  internalDomains: string[];
  internalCidrs: string[];
  namedPatterns: Record<string, string>;
  functions?: FunctionRegistry;
  limits?: Partial<DslLimits>;
  /** ACM guards (compileGuard): accept `$task.field` references. Off for blueprint conditions. */
  allowTaskRefs?: boolean;
}

export interface CompileConditionResult {
  condition?: CompiledCondition;
  problems: DslProblem[];
}

/** Steward config lists and patterns, with the blueprint's `lists:` block on top (spec-decisions D9). */
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
    taskRefs: opts.allowTaskRefs === true,
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
