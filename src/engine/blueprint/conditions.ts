/**
 * Bridge to the DSL (src/engine/dsl): compiles a condition found at `path` in a source document and maps
 * each DSL problem (relative path like "all[2].any[0]" + offset) back to FILE:LINE:COL.
 */
import { StewardError, type StewardErrorCode } from '../../errors.js';
import { compileCondition, compileWhen, dslOptionsFromConfig } from '../dsl/index.js';
import type { EngineConfig } from '../config.js';
import type { FunctionRegistry } from '../dsl/functions.js';
import type { CompiledCondition, WhenMatcher } from '../types.js';
import type { PathSeg, SourceDoc } from './source.js';

export type DslOptions = ReturnType<typeof dslOptionsFromConfig>;

/** `functions`: the embedding application's custom DSL functions (ACGP-1004 §9.4.6 extension registry). */
export function dslOptions(config: EngineConfig, lists: Record<string, string[]>, functions?: FunctionRegistry): DslOptions {
  return dslOptionsFromConfig(config, lists, functions);
}

/** "all[2].any[0]" → ['all', 2, 'any', 0]; "" → []. */
export function parseRelativePath(rel: string): PathSeg[] {
  const out: PathSeg[] = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(rel)) !== null) out.push(m[1] !== undefined ? m[1] : Number(m[2]));
  return out;
}

export function compileConditionAt(
  doc: SourceDoc,
  path: PathSeg[],
  cond: unknown,
  opts: DslOptions,
  errors: StewardError[],
): CompiledCondition | undefined {
  const res = compileCondition(cond, opts);
  for (const p of res.problems) {
    const at = [...path, ...parseRelativePath(p.path)];
    const position = p.offset !== undefined ? doc.posInScalar(at, p.offset) : doc.pos(at);
    errors.push(new StewardError(p.code as StewardErrorCode, p.message, { position }));
  }
  return res.problems.length ? undefined : res.condition;
}

const MATCH_ALL: WhenMatcher = () => true;

export function compileWhenAt(when: unknown): WhenMatcher {
  if (when === undefined || when === null) return MATCH_ALL;
  // A non-object `when` is a schema error already; never match rather than throw.
  if (typeof when !== 'object' || Array.isArray(when)) return () => false;
  return compileWhen(when as Record<string, unknown>);
}
