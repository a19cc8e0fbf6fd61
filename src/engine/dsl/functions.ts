/**
 * The custom function registry (ACGP-1004 §9.4.6 "extension registry"). Each function declares its
 * parameters and return type; calls are checked at load (arity, literal argument types), and the
 * implementation receives evaluated arguments at run time.
 */
import { StewardError } from '../../errors.js';
import type { EvalContext } from '../types.js';

export type DslType = 'any' | 'string' | 'number' | 'boolean' | 'array';

export interface DslParam {
  name: string;
  type: DslType;
  /** The argument must be a literal (checked at load), e.g. a list name. */
  literal?: boolean;
  optional?: boolean;
}

export interface DslFunction {
  name: string;
  params: DslParam[];
  returns: DslType;
  /** The implementation returns a Promise (state or network lookups): conditions using it become async. */
  async?: boolean;
  /** Missing fields arrive as undefined. A throw makes the condition un-evaluable (fail closed). */
  impl(args: unknown[], ctx: EvalContext): unknown;
}

const SQL_ARG: DslParam = { name: 'sql', type: 'any' };
const DIALECT: DslParam = { name: 'dialect', type: 'string', literal: true, optional: true };

/** Functions implemented by the compiler itself; their names cannot be registered again. */
export const BUILTIN_FUNCTIONS: Readonly<Record<string, { params: DslParam[]; returns: DslType; async?: boolean }>> = {
  is_external: { params: [{ name: 'field', type: 'any' }], returns: 'boolean' },
  in_allowlist: { params: [{ name: 'field', type: 'any' }, { name: 'list', type: 'string', literal: true }], returns: 'boolean' },
  in_denylist: { params: [{ name: 'field', type: 'any' }, { name: 'list', type: 'string', literal: true }], returns: 'boolean' },
  matches_regex: { params: [{ name: 'field', type: 'any' }, { name: 'pattern', type: 'string', literal: true }], returns: 'boolean' },
  contains_entity: { params: [{ name: 'field', type: 'any' }, { name: 'type', type: 'string', literal: true }], returns: 'boolean' },
  exceeds_rate: {
    params: [
      { name: 'key', type: 'any' },
      { name: 'limit', type: 'number', literal: true },
      { name: 'window', type: 'any', literal: true },
    ],
    returns: 'boolean',
    async: true,
  },
  'storage.get': {
    params: [
      { name: 'key', type: 'any' },
      { name: 'default', type: 'any', literal: true, optional: true },
    ],
    returns: 'any',
    async: true,
  },
  exists: { params: [{ name: 'field', type: 'any' }], returns: 'boolean' },
  // Protocol-aware facts (issue #28, docs/dsl.md "Facts from the action itself"): facts.ts.
  sql_statements: { params: [SQL_ARG, DIALECT], returns: 'array' },
  sql_tables_read: { params: [SQL_ARG, DIALECT], returns: 'array' },
  sql_tables_written: { params: [SQL_ARG, DIALECT], returns: 'array' },
  sql_tables_dropped: { params: [SQL_ARG, DIALECT], returns: 'array' },
  sql_functions: { params: [SQL_ARG, DIALECT], returns: 'array' },
  sql_table_functions: { params: [SQL_ARG, DIALECT], returns: 'array' },
  sql_unbounded_write: { params: [SQL_ARG, DIALECT], returns: 'boolean' },
  shell_commands: { params: [{ name: 'command', type: 'any' }], returns: 'array' },
  shell_uses: { params: [{ name: 'command', type: 'any' }, { name: 'program', type: 'string', literal: true }], returns: 'boolean' },
  shell_redirects: { params: [{ name: 'command', type: 'any' }], returns: 'array' },
  shell_command_lines: { params: [{ name: 'command', type: 'any' }], returns: 'array' },
  shell_inline_code: { params: [{ name: 'command', type: 'any' }], returns: 'boolean' },
  url_scheme: { params: [{ name: 'url', type: 'any' }], returns: 'string' },
  url_host: { params: [{ name: 'url', type: 'any' }], returns: 'string' },
  url_registrable_domain: { params: [{ name: 'url', type: 'any' }], returns: 'string' },
  url_is_ip: { params: [{ name: 'url', type: 'any' }], returns: 'boolean' },
  url_port: { params: [{ name: 'url', type: 'any' }], returns: 'number' },
  url_path: { params: [{ name: 'url', type: 'any' }], returns: 'string' },
  if_unparsed: { params: [{ name: 'fact', type: 'any' }, { name: 'default', type: 'any', literal: true }], returns: 'any' },
};

/** Functions that read or write agent state; not allowed in eval_tier 0 tripwires. */
export const STATEFUL_FUNCTIONS: ReadonlySet<string> = new Set(['exceeds_rate', 'storage.get']);

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;

export class FunctionRegistry {
  private readonly fns = new Map<string, DslFunction>();

  register(fn: DslFunction): this {
    if (!NAME_RE.test(fn.name)) throw new StewardError('STEWARD_CONFIG', `invalid DSL function name '${fn.name}'`);
    if (fn.name in BUILTIN_FUNCTIONS) throw new StewardError('STEWARD_CONFIG', `'${fn.name}' is a standard DSL function and cannot be replaced`);
    if (this.fns.has(fn.name)) throw new StewardError('STEWARD_CONFIG', `DSL function '${fn.name}' is already registered`);
    let seenOptional = false;
    for (const p of fn.params) {
      if (seenOptional && !p.optional) throw new StewardError('STEWARD_CONFIG', `DSL function '${fn.name}': required parameter '${p.name}' after an optional one`);
      seenOptional ||= p.optional === true;
    }
    this.fns.set(fn.name, fn);
    return this;
  }

  get(name: string): DslFunction | undefined {
    return this.fns.get(name);
  }

  names(): string[] {
    return [...this.fns.keys()];
  }
}

/**
 * The closest known name by edit distance, for "did you mean" on an unknown function (typos are the
 * usual cause). Same rule as the blueprint schema's key suggestions, kept here so the DSL does not
 * depend on the blueprint layer: at most 2 edits, or a third of the name's length for long names.
 */
export function suggestFunction(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  const a = name.toLowerCase();
  for (const k of [...known].sort()) {
    const d = editDistance(a, k.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]!;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]!;
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}
