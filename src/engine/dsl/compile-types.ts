/**
 * Shared compile-time types and helpers of the condition compiler. A leaf module: compiler.ts,
 * builtins.ts, fused.ts and regex.ts all import from here and never from each other in a circle, so
 * the DSL's imports form a DAG (compile-types → regex/fused → builtins → compiler → index).
 */
import type { EvalContext } from '../types.js';
import type { DslProblem, Node } from './ast.js';
import type { DslType, FunctionRegistry } from './functions.js';
import type { NetworkMatcher } from './network.js';
import { isPromise } from './values.js';

export type { DslType } from './functions.js';

export type Fn = (ctx: EvalContext) => unknown;

export interface CNode {
  type: DslType;
  async: boolean;
  fn: Fn;
  /** Present for literal nodes: the constant value (for load-time checks and specialisation). */
  literal?: { value: unknown; unit?: 'size' | 'duration' };
  node: Node;
  /** Set when the closure already includes a requested negation (fused leaves). */
  negApplied?: boolean;
}

export interface CompiledRegex {
  test(s: string): boolean;
}

export interface ListMatcher {
  has(v: unknown): boolean;
  /** Exact string entries, for the fused fast path (a hit here is a hit of `has`). */
  exact: ReadonlySet<string>;
}

export interface CompileEnv {
  problems: DslProblem[];
  functions: Set<string>;
  lists: Record<string, readonly string[]>;
  listCache: Map<string, ListMatcher>;
  network(): NetworkMatcher;
  patterns: Record<string, string>;
  registry?: FunctionRegistry;
  regexCache: Map<string, CompiledRegex>;
  /** ACM guards only: `$task.field` references are allowed (docs/acm.md, guards). */
  taskRefs?: boolean;
}

/** Compiles an argument node; passed into builtins.ts by the compiler (keeps the import graph acyclic). */
export type CompileArg = (node: Node, env: CompileEnv) => CNode;

export function problem(env: CompileEnv, node: Node, code: DslProblem['code'], message: string, offset = node.offset): void {
  // Structured (YAML) nodes have offset -1: their position is the path alone.
  env.problems.push(offset >= 0 ? { code, message, path: node.path, offset } : { code, message, path: node.path });
}

export function andThen<T>(v: unknown, f: (v: unknown) => T): T | Promise<T> {
  return isPromise(v) ? v.then(f) : f(v);
}
