/** Compiles calls: the standard functions of ACGP-1004 §9.4.3 (plus exists, storage.get) and registry functions. */
import { StewardError } from '../../errors.js';
import type { EvalContext } from '../types.js';
import type { CallNode } from './ast.js';
import { andThen, problem, type CNode, type CompileArg, type CompileEnv, type Fn, type ListMatcher } from './compile-types.js';
import { FactParseError, isSqlDialect, preloadSqlDialect, shellFacts, sqlFacts, SQL_DIALECTS, urlFacts, type SqlFacts } from './facts.js';
import { ENTITY_DETECTORS, ENTITY_TYPES, isEntityType } from './entities.js';
import { BUILTIN_FUNCTIONS, suggestFunction, type DslFunction, type DslParam, type DslType } from './functions.js';
import { parseDuration } from './literals.js';
import { normaliseHostEntry, parseIPv4, parseIPv6, readHosts } from './network.js';
import { PATTERN_NAME_RE } from './patterns.js';
import { compileRegex } from './regex.js';
import { fuseInList, fusePredicate } from './fused.js';
import { isPromise, present, simplePath, someText } from './values.js';

export type { CompileEnv, ListMatcher } from './compile-types.js';

const FALSE: Fn = () => false;

/** `compileArg` compiles the argument nodes (the compiler's compileNode, passed in so builtins never import the compiler). */
export function compileCall(node: CallNode, env: CompileEnv, compileArg: CompileArg, neg = false): CNode {
  const builtin = BUILTIN_FUNCTIONS[node.name];
  const custom = builtin ? undefined : env.registry?.get(node.name);
  const sig = builtin ?? custom;
  // Typed 'any' so a call already reported (unknown, arity, argument) does not also fail the comparison around it.
  const fail = (): CNode => ({ type: 'any', async: false, fn: FALSE, node });
  if (!sig) {
    const names = [...Object.keys(BUILTIN_FUNCTIONS), ...(env.registry?.names() ?? [])].sort();
    const hint = suggestFunction(node.name, names);
    problem(env, node, 'STEWARD_DSL_UNKNOWN_FUNCTION', `unknown function '${node.name}' (${hint ? `did you mean '${hint}'? ` : ''}known: ${names.join(', ')})`);
    return fail();
  }
  env.functions.add(node.name);
  const required = sig.params.filter((p) => !p.optional).length;
  if (node.args.length < required || node.args.length > sig.params.length) {
    const want = required === sig.params.length ? `${required}` : `${required}..${sig.params.length}`;
    problem(env, node, 'STEWARD_DSL_ARITY', `${node.name}() takes ${want} argument(s) (${sig.params.map((p) => p.name).join(', ')}), got ${node.args.length}`);
    return fail();
  }
  const args = node.args.map((a) => compileArg(a, env));
  let ok = true;
  args.forEach((a, i) => (ok = checkArg(node.name, sig.params[i]!, a, env) && ok));
  if (!ok) return fail();
  if (custom) return compileCustom(custom, args, node);
  const out = compileBuiltin(node, args, env, neg);
  return out ?? fail();
}

function checkArg(fn: string, p: DslParam, a: CNode, env: CompileEnv): boolean {
  if (p.literal && !a.literal) {
    problem(env, a.node, 'STEWARD_DSL_TYPE', `argument '${p.name}' of ${fn}() must be a literal value`);
    return false;
  }
  if (p.type !== 'any' && a.type !== 'any' && a.type !== p.type) {
    problem(env, a.node, 'STEWARD_DSL_TYPE', `argument '${p.name}' of ${fn}() must be a ${p.type}, found a ${a.type}`);
    return false;
  }
  return true;
}

/** Applies a one-argument predicate, awaiting the argument only when it is async. */
function unaryCall(arg: CNode, node: CallNode, f: (v: unknown, ctx: EvalContext) => unknown, type: DslType = 'boolean', async = false): CNode {
  const g = arg.fn;
  if (arg.async) return { type, async: true, fn: (ctx) => andThen(g(ctx), (v) => f(v, ctx)), node };
  return { type, async, fn: (ctx) => f(g(ctx), ctx), node };
}

function compileBuiltin(node: CallNode, args: CNode[], env: CompileEnv, neg: boolean): CNode | undefined {
  const [a0, a1, a2] = args as [CNode, CNode | undefined, CNode | undefined];
  // Sync predicates over a plain trace field fuse getter, predicate and NOT into one closure.
  const path = node.args[0]?.kind === 'field' && !a0.async ? simplePath(node.args[0].segments) : undefined;
  const unary = (arg: CNode, n: CallNode, f: (v: unknown, ctx: EvalContext) => unknown, type: DslType = 'boolean', async = false): CNode => {
    if (path && type === 'boolean' && !async) {
      const pred = f as (v: unknown) => boolean;
      return { type, async: false, fn: fusePredicate(path, pred, neg), node: n, negApplied: true };
    }
    return unaryCall(arg, n, f, type, async);
  };
  switch (node.name) {
    case 'is_external': {
      const net = env.network();
      return unary(a0, node, (v) => net.isExternal(v));
    }
    case 'exists':
      return unary(a0, node, present);
    case 'in_allowlist':
    case 'in_denylist': {
      const name = a1!.literal!.value as string;
      const list = listMatcher(name, env, node.name === 'in_allowlist');
      if (!list) {
        problem(env, a1!.node, 'STEWARD_DSL_UNKNOWN_LIST', `unknown list '${name}' (define it under lists: in the steward config or the blueprint)`);
        return undefined;
      }
      if (path) return { type: 'boolean', async: false, fn: fuseInList(path, list, node.name === 'in_allowlist', neg), node, negApplied: true };
      // An array value is allowed when every element is allowed, denied when any element is denied.
      if (node.name === 'in_allowlist') return unary(a0, node, (v) => (Array.isArray(v) ? v.length > 0 && v.every((x) => list.has(x)) : list.has(v)));
      return unary(a0, node, (v) => (Array.isArray(v) ? v.some((x) => list.has(x)) : list.has(v)));
    }
    case 'matches_regex': {
      const pat = a1!.literal!.value as string;
      const named = Object.prototype.hasOwnProperty.call(env.patterns, pat) ? env.patterns[pat] : undefined;
      if (named === undefined && PATTERN_NAME_RE.test(pat)) {
        problem(env, a1!.node, 'STEWARD_DSL_REGEX', `unknown named pattern '${pat}' (known: ${Object.keys(env.patterns).sort().join(', ')})`);
        return undefined;
      }
      const re = compileRegex(named ?? pat, env, a1!.node);
      if (!re) return undefined;
      const test = (s: string): boolean => re.test(s);
      return unary(a0, node, (v) => someText(v, test));
    }
    case 'contains_entity': {
      const type = a1!.literal!.value as string;
      if (!isEntityType(type)) {
        problem(env, a1!.node, 'STEWARD_DSL_TYPE', `unknown entity type '${type}' (known: ${ENTITY_TYPES.join(', ')})`);
        return undefined;
      }
      const detect = ENTITY_DETECTORS[type];
      return unary(a0, node, (v) => someText(v, detect));
    }
    case 'exceeds_rate':
      return compileExceedsRate(node, a0, a1!, a2!, env);
    case 'sql_statements':
    case 'sql_tables_read':
    case 'sql_tables_written':
    case 'sql_tables_dropped':
    case 'sql_functions':
    case 'sql_table_functions':
    case 'sql_unbounded_write': {
      const d = a1?.literal?.value ?? 'postgresql';
      if (!isSqlDialect(d)) {
        problem(env, a1!.node, 'STEWARD_DSL_TYPE', `unknown SQL dialect '${String(d)}' (known: ${SQL_DIALECTS.join(', ')})`);
        return undefined;
      }
      const pick = SQL_PICK[node.name]!;
      // Load the dialect's grammar now, not on the first evaluation in the hot path.
      preloadSqlDialect(d);
      return unaryCall(a0, node, (v) => pick(sqlFacts(v, d)), node.name === 'sql_unbounded_write' ? 'boolean' : 'array');
    }
    case 'shell_commands':
      return unaryCall(a0, node, (v) => [...new Set(shellFacts(v).commands.map((c) => c.program))], 'array');
    case 'shell_command_lines':
      return unaryCall(a0, node, (v) => shellFacts(v).commands.map((c) => c.argv.join(' ')), 'array');
    case 'shell_uses': {
      const prog = a1!.literal!.value as string;
      return unaryCall(a0, node, (v) => shellFacts(v).commands.some((c) => c.program === prog));
    }
    case 'shell_redirects':
      return unaryCall(a0, node, (v) => shellFacts(v).redirects, 'array');
    case 'shell_inline_code':
      return unaryCall(a0, node, (v) => shellFacts(v).inlineCode);
    case 'url_scheme':
      return unaryCall(a0, node, (v) => urlFacts(v).scheme, 'string');
    case 'url_host':
      return unaryCall(a0, node, (v) => urlFacts(v).host, 'string');
    case 'url_registrable_domain':
      return unaryCall(a0, node, (v) => urlFacts(v).domain, 'string');
    case 'url_is_ip':
      return unaryCall(a0, node, (v) => urlFacts(v).ip);
    case 'url_port':
      return unaryCall(a0, node, (v) => urlFacts(v).port, 'number');
    case 'url_path':
      return unaryCall(a0, node, (v) => urlFacts(v).path, 'string');
    case 'if_unparsed':
      return compileIfUnparsed(node, a0, a1!, env);
    case 'storage.get': {
      const dflt = a1?.literal?.value;
      return unary(
        a0,
        node,
        (k, ctx) => {
          const state = requireState(ctx, 'storage.get');
          if (!present(k) || typeof k === 'object') return dflt;
          return state.get(ctx.stateNamespace, String(k)).then((v) => (present(v) ? v : dflt));
        },
        'any',
        true,
      );
    }
  }
  return undefined;
}

const SQL_PICK: Record<string, (f: SqlFacts) => unknown> = {
  sql_statements: (f) => f.statements,
  sql_tables_read: (f) => f.read,
  sql_tables_written: (f) => f.written,
  sql_tables_dropped: (f) => f.dropped,
  sql_functions: (f) => f.functions,
  sql_table_functions: (f) => f.tableFunctions,
  sql_unbounded_write: (f) => f.unboundedWrite,
};

/**
 * if_unparsed(fact, default): the author's per-condition opt-out of failing closed. Only a fact
 * function's parse/limit error (FactParseError) becomes the literal default; every other evaluation
 * error still propagates. The first argument must be a fact function call.
 */
function compileIfUnparsed(node: CallNode, fact: CNode, dflt: CNode, env: CompileEnv): CNode | undefined {
  const inner = node.args[0];
  if (inner?.kind !== 'call' || !FACT_FUNCTIONS.has(inner.name)) {
    problem(env, fact.node, 'STEWARD_DSL_TYPE', `if_unparsed() takes a call of ${[...FACT_FUNCTIONS].join(', ')} as its first argument`);
    return undefined;
  }
  const value = dflt.literal!.value;
  const type: DslType = Array.isArray(value) ? 'array' : typeof value === 'boolean' ? 'boolean' : typeof value === 'number' ? 'number' : typeof value === 'string' ? 'string' : 'any';
  if (fact.type !== 'any' && type !== fact.type) {
    problem(env, dflt.node, 'STEWARD_DSL_TYPE', `if_unparsed() default must be a ${fact.type} like ${inner.name}(), found a ${type}`);
    return undefined;
  }
  const f = fact.fn;
  const recover = (e: unknown): unknown => {
    if (e instanceof FactParseError) return value;
    throw e;
  };
  if (fact.async) return { type: fact.type, async: true, fn: (ctx) => Promise.resolve().then(() => f(ctx)).catch(recover), node };
  return {
    type: fact.type,
    async: false,
    fn: (ctx) => {
      try {
        return f(ctx);
      } catch (e) {
        return recover(e);
      }
    },
    node,
  };
}

const FACT_FUNCTIONS: ReadonlySet<string> = new Set([...Object.keys(SQL_PICK), 'shell_commands', 'shell_command_lines', 'shell_uses', 'shell_redirects', 'shell_inline_code', 'url_scheme', 'url_host', 'url_registrable_domain', 'url_is_ip', 'url_port', 'url_path']);

function requireState(ctx: EvalContext, fn: string): NonNullable<EvalContext['state']> {
  if (!ctx.state) throw new StewardError('STEWARD_STATE_UNAVAILABLE', `${fn}() needs a state store, none is configured`, { retryable: true });
  return ctx.state;
}

function compileExceedsRate(node: CallNode, key: CNode, limitArg: CNode, windowArg: CNode, env: CompileEnv): CNode | undefined {
  const limit = limitArg.literal!.value as number;
  if (!Number.isFinite(limit) || limit < 0) {
    problem(env, limitArg.node, 'STEWARD_DSL_TYPE', 'exceeds_rate() limit must be a non-negative number');
    return undefined;
  }
  const w = windowArg.literal!;
  const windowMs = typeof w.value === 'string' ? parseDuration(w.value) : w.unit === 'duration' ? (w.value as number) : undefined;
  if (windowMs === undefined || !(windowMs > 0)) {
    problem(env, windowArg.node, 'STEWARD_DSL_TYPE', 'exceeds_rate() window must be a duration such as "1m", "1h", "30s" or "1d"');
    return undefined;
  }
  return unaryCall(
    key,
    node,
    (k, ctx) => {
      if (!present(k) || typeof k === 'object') throw new StewardError('STEWARD_DSL_EVAL', 'exceeds_rate(): the rate key is missing or not a scalar');
      const state = requireState(ctx, 'exceeds_rate');
      const ks = String(k);
      // The window is part of the key so limits with different windows never prune each other's hits.
      return state.hit(ctx.stateNamespace, `rate:${windowMs}:${ks}`, windowMs, ctx.nowMs, `${ctx.eventId ?? ctx.trace.trace_id}:${ks}`).then((n) => n > limit);
    },
    'boolean',
    true,
  );
}

function compileCustom(def: DslFunction, args: CNode[], node: CallNode): CNode {
  const fns = args.map((a) => a.fn);
  const argsAsync = args.some((a) => a.async);
  const type = def.returns;
  // The declared type is a contract the compiler relies on: a 'boolean' result feeds NOT and all/any
  // directly, where undefined would pass as "not true" and `NOT f()` would let the action through.
  // Anything else makes the condition un-evaluable, so the stage fails closed (spec-decisions D11). Other
  // declared types may be missing (undefined/null), which comparisons already treat as false.
  const checked = (out: unknown): unknown => {
    if (type === 'boolean' ? typeof out === 'boolean' : type === 'any' || out === undefined || out === null || (type === 'array' ? Array.isArray(out) : typeof out === type)) return out;
    const got = out === null ? 'null' : Array.isArray(out) ? 'an array' : typeof out === 'object' ? 'an object' : out === undefined ? 'undefined' : `a ${typeof out}`;
    throw new StewardError('STEWARD_DSL_EVAL', `${def.name}() returned ${got}, declared to return ${type === 'array' ? 'an array' : `a ${type}`}`);
  };
  const call = (vals: unknown[], ctx: EvalContext): unknown => {
    let out: unknown;
    try {
      out = def.impl(vals, ctx);
    } catch (e) {
      throw new StewardError('STEWARD_DSL_EVAL', `${def.name}() failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    if (isPromise(out)) {
      return out.then(checked, (e: unknown) => {
        throw e instanceof StewardError ? e : new StewardError('STEWARD_DSL_EVAL', `${def.name}() failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      });
    }
    return checked(out);
  };
  if (!argsAsync) return { type, async: def.async === true, fn: (ctx) => call(fns.map((f) => f(ctx)), ctx), node };
  return { type, async: true, fn: (ctx) => Promise.all(fns.map((f) => f(ctx))).then((vals) => call(vals, ctx)), node };
}

// Values an allowlist may match by host: an http(s)/ws(s)/ftp URL with an authority, or a bare
// `host[:port]` whose host is a dotted name of letter-digit-hyphen labels, an IPv4 address or
// `[IPv6]`. Identifiers never qualify: no other scheme (`EXEC:read_file`, `x://read_file`), no
// userinfo (`rm_rf@read_file:1`), no path, no underscore (`read_file:1`).
const URL_RE = /^(?:https?|wss?|ftp):\/\//i;
const LABEL = '[\\p{L}\\p{N}](?:[\\p{L}\\p{N}-]*[\\p{L}\\p{N}])?';
const BARE_HOST_RE = new RegExp(`^(?:\\[[0-9A-Fa-f:.]+\\]|(?:${LABEL}\\.)+${LABEL}\\.?)(?::\\d{1,5})?$`, 'u');
// A host reading an allowlist accepts: an IP or a letter-digit-hyphen name (`_` is no hostname character).
const LDH_HOST_RE = /^[a-z0-9-]+(?:\.[a-z0-9-]+)*$|^[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*$/u;

/** Starts with a letter (so never an IPv4 number such as `0x7f000001`), no URL or host syntax. */
export const PLAIN_IDENTIFIER_RE = /^[A-Za-z][A-Za-z0-9_-]*$/;

function hostShaped(v: string): boolean {
  if (v.indexOf('.') < 0 && v.indexOf(':') < 0) return false;
  return URL_RE.test(v) || BARE_HOST_RE.test(v) || (v.indexOf(':') >= 0 && parseIPv6(v) !== undefined);
}

/**
 * Exact match first. Otherwise the host readings of the value (network.ts readHosts) are compared
 * with the entries read as hosts (case-insensitive, trailing dot ignored, IPs canonical, `*.domain`
 * by suffix). The two lists fail safe in opposite directions when a value is ambiguous:
 * - allowlist: host matching only for values that really are URLs/hosts (hostShaped), and only when
 *   every reading is a proper host and allowed — parsers that disagree must all land on the list;
 * - denylist: any reading of any value that hits an entry denies (`EXEC:shell`, `SHELL`,
 *   `x@paste.bin`, `https://good.com\@paste.bin/`), since an agent must not escape a denylist by
 *   decorating a name.
 */
function listMatcher(name: string, env: CompileEnv, allow: boolean): ListMatcher | undefined {
  const key = `${allow ? 'allow' : 'deny'}:${name}`;
  const cached = env.listCache.get(key);
  if (cached) return cached;
  if (!Object.prototype.hasOwnProperty.call(env.lists, name)) return undefined;
  const entries = (env.lists[name] ?? []).map(String);
  const exact = new Set(entries);
  const hosts = new Set<string>();
  const suffixes: string[] = [];
  for (const e of entries) {
    if (e.startsWith('*.')) for (const h of normaliseHostEntry(e.slice(2))) suffixes.push('.' + h);
    else for (const h of normaliseHostEntry(e)) hosts.add(h);
  }
  const listed = (h: string): boolean => {
    if (hosts.has(h)) return true;
    for (const s of suffixes) if (h.endsWith(s)) return true;
    return false;
  };
  const allowed = (h: string): boolean => listed(h) && (parseIPv4(h) !== undefined || h.includes(':') || LDH_HOST_RE.test(h));
  const m: ListMatcher = allow
    ? {
        exact,
        has(v) {
          if (typeof v === 'number' || typeof v === 'boolean') return exact.has(String(v));
          if (typeof v !== 'string') return false;
          if (exact.has(v)) return true;
          if (!hostShaped(v)) return false;
          const r = readHosts(v);
          return r !== undefined && !r.invalid && r.hosts.length > 0 && r.hosts.every(allowed);
        },
      }
    : {
        exact,
        has(v) {
          if (typeof v === 'number' || typeof v === 'boolean') return exact.has(String(v));
          if (typeof v !== 'string') return false;
          if (exact.has(v)) return true;
          // A plain identifier (symbol, tool, program) has one reading, itself in lower case (what readHosts
          // gives for it, tested): skip the general parse, which dominated the tripwire stage's time.
          if (PLAIN_IDENTIFIER_RE.test(v)) return listed(v.toLowerCase());
          const r = readHosts(v);
          return r !== undefined && r.hosts.some(listed);
        },
      };
  env.listCache.set(key, m);
  return m;
}
