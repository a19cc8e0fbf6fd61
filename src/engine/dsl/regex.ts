/** Author regexes (matches, matches_regex) are compiled once at load, always on RE2 (linear time). */
import { RE2JS } from 're2js';
import type { Node } from './ast.js';
import type { CompileEnv, CompiledRegex } from './compile-types.js';

export type { CompiledRegex } from './compile-types.js';

export function compileRegex(pattern: string, env: CompileEnv, at: Node): CompiledRegex | undefined {
  const cached = env.regexCache.get(pattern);
  if (cached) return cached;
  try {
    const re = RE2JS.compile(pattern);
    const compiled: CompiledRegex = { test: (s) => re.test(s) };
    env.regexCache.set(pattern, compiled);
    return compiled;
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    env.problems.push({ code: 'STEWARD_DSL_REGEX', message: `invalid regular expression (RE2 syntax): ${msg}`, path: at.path, ...(at.offset >= 0 ? { offset: at.offset } : {}) });
    return undefined;
  }
}
