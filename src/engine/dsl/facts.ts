/**
 * Protocol-aware facts (issue #28, docs/dsl.md "Facts from the action itself", spec-decisions
 * "Protocol-aware facts"): SQL, shell and URL text parsed by real parsers, so conditions judge what an
 * action does rather than keywords in a string or fields the agent fills in. Pure: no fs, no network.
 * Text that does not parse, or exceeds the size/nesting limits, throws FactParseError (a
 * STEWARD_DSL_EVAL: the condition cannot be evaluated and the stage fails closed) unless the author
 * wraps the call in if_unparsed(call, default) (parse errors only, never limits). Parses are cached per text (bounded LRU).
 */
import sh from 'mvdan-sh';
import { parse as parseDomain } from 'tldts';
import { FACT_LIMITS, FactLimitError, FactParseError } from './fact-errors.js';
import { analyse, astify, isObj, type Grammar, type Obj, type SqlFacts } from './sql-ast.js';
import { clickhouseFacts } from './clickhouse-sql.js';

export { FACT_LIMITS, FactLimitError, FactParseError } from './fact-errors.js';
export type { SqlFacts } from './sql-ast.js';

export const SQL_DIALECTS = ['postgresql', 'mysql', 'sqlite', 'clickhouse'] as const;
export type SqlDialect = (typeof SQL_DIALECTS)[number];

// Grammars tried in order; the first that parses decides. ClickHouse has its own front end
// (clickhouse-sql.ts: lexer, statement classifier, normalised bodies for these grammars).
const GRAMMARS: Record<Exclude<SqlDialect, 'clickhouse'>, Grammar[]> = {
  postgresql: ['postgresql', 'mysql', 'sqlite'],
  mysql: ['mysql', 'postgresql', 'sqlite'],
  sqlite: ['sqlite', 'postgresql', 'mysql'],
};

class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    if (this.m.size >= this.max) this.m.delete(this.m.keys().next().value as string);
    this.m.set(k, v);
  }
}

function text(v: unknown, what: string, max: number): string {
  if (typeof v !== 'string') throw new FactParseError(`${what}: the value is ${v === undefined || v === null ? 'missing' : 'not a string'}`);
  if (v.length > max) throw new FactLimitError(`${what}: ${v.length} characters exceed the limit of ${max}`);
  let depth = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 40 || c === 91 || c === 123) {
      if (++depth > FACT_LIMITS.nesting) throw new FactLimitError(`${what}: brackets nest deeper than ${FACT_LIMITS.nesting}`);
    } else if ((c === 41 || c === 93 || c === 125) && depth > 0) depth--;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------- SQL

const sqlCache = new Lru<SqlFacts>(FACT_LIMITS.cacheEntries);

export function isSqlDialect(s: unknown): s is SqlDialect {
  return typeof s === 'string' && (SQL_DIALECTS as readonly string[]).includes(s);
}

/** Load the first grammar a dialect reads with, so the first evaluation does not pay for it (compile time). */
export function preloadSqlDialect(dialect: SqlDialect): void {
  if (dialect === 'clickhouse') clickhouseFacts('SELECT 1');
  else astify('SELECT 1', GRAMMARS[dialect][0]!);
}

export function sqlFacts(v: unknown, dialect: SqlDialect = 'postgresql'): SqlFacts {
  const q = text(v, 'SQL', FACT_LIMITS.sqlChars);
  const key = `${dialect}\u0000${q}`;
  const hit = sqlCache.get(key);
  if (hit) return hit;
  if (dialect === 'clickhouse') {
    const facts = clickhouseFacts(q);
    sqlCache.set(key, facts);
    return facts;
  }
  let lastErr = '';
  for (const db of GRAMMARS[dialect]) {
    let stmts: unknown[];
    try {
      stmts = astify(q, db);
    } catch (e) {
      lastErr = e instanceof Error ? e.message : String(e);
      continue;
    }
    if (stmts.length === 0) throw new FactParseError('SQL: no statement');
    const facts = analyse(stmts);
    sqlCache.set(key, facts);
    return facts;
  }
  throw new FactParseError(`SQL does not parse (${dialect}): ${lastErr.slice(0, 200)}`);
}

// -------------------------------------------------------------------------------------------- shell

export interface ShellCommand {
  /** Program name as written, basename (`/bin/rm` → `rm`); `$(…)`-computed names read as `$`. */
  program: string;
  argv: string[];
}

export interface ShellFacts {
  commands: ShellCommand[];
  redirects: string[];
  /** An interpreter was given inline code (bash -c, python -c, node -e, perl -e, …) or eval/source of text. */
  inlineCode: boolean;
}

const shellCache = new Lru<ShellFacts>(FACT_LIMITS.cacheEntries);
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'busybox']);
const INLINE_FLAGS: Record<string, readonly string[]> = {
  python: ['-c'], python2: ['-c'], python3: ['-c'], node: ['-e', '--eval', '-p', '--print'], nodejs: ['-e', '-p'], deno: ['eval'], bun: ['-e', '--eval'],
  perl: ['-e', '-E'], ruby: ['-e'], php: ['-r'], lua: ['-e'], osascript: ['-e'], pwsh: ['-c', '-command', '-Command'], powershell: ['-c', '-command', '-Command'],
};
// Wrappers whose operand is another command: its program counts as a command too.
const WRAPPERS = new Set(['sudo', 'doas', 'env', 'nohup', 'nice', 'time', 'timeout', 'xargs', 'exec', 'command', 'builtin', 'stdbuf', 'chroot', 'su', 'watch', 'strace']);

export function shellFacts(v: unknown): ShellFacts {
  const src = text(v, 'shell', FACT_LIMITS.shellChars);
  const hit = shellCache.get(src);
  if (hit) return hit;
  const facts: ShellFacts = { commands: [], redirects: [], inlineCode: false };
  parseShell(src, facts, 0);
  shellCache.set(src, facts);
  return facts;
}

function parseShell(src: string, facts: ShellFacts, depth: number): void {
  if (depth > FACT_LIMITS.shellDepth) throw new FactLimitError(`shell: inline code nests deeper than ${FACT_LIMITS.shellDepth}`);
  let file: unknown;
  try {
    file = sh.syntax.NewParser().Parse(src, '');
  } catch (e) {
    const msg = isObj(e) && typeof e.Error === 'function' ? String((e.Error as () => string)()) : e instanceof Error ? e.message : String(e);
    throw new FactParseError(`shell does not parse: ${msg.slice(0, 200)}`);
  }
  sh.syntax.Walk(file, (node) => {
    if (!node) return true;
    const t = sh.syntax.NodeType(node);
    const n = node as Obj;
    if (t === 'CallExpr') {
      const argv = ((n.Args as unknown[] | null) ?? []).map(wordText);
      if (argv.length > 0) command(argv, facts, depth);
    } else if (t === 'Redirect') {
      const w = n.Word ? wordText(n.Word) : '';
      if (w !== '') facts.redirects.push(w);
    }
    return true;
  });
}

function command(argv: string[], facts: ShellFacts, depth: number): void {
  let i = 0;
  while (i < argv.length) {
    const prog = basename(argv[i]!);
    facts.commands.push({ program: prog, argv: argv.slice(i) });
    const rest = argv.slice(i + 1);
    if (prog === 'eval' || prog === 'source' || prog === '.') {
      facts.inlineCode = true;
      if (prog === 'eval' && rest.length > 0) parseShell(rest.join(' '), facts, depth + 1);
      return;
    }
    const base = prog.replace(/[0-9.]+$/, '');
    if (SHELLS.has(prog) || SHELLS.has(base)) {
      const c = rest.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
      if (c >= 0) {
        facts.inlineCode = true;
        const code = rest[c + 1];
        if (code !== undefined) parseShell(code, facts, depth + 1);
      }
      return;
    }
    const flags = INLINE_FLAGS[prog] ?? INLINE_FLAGS[base];
    if (flags && rest.some((a) => flags.includes(a) || flags.some((f) => f.length === 2 && f.startsWith('-') && a.startsWith(f) && a.length > 2))) facts.inlineCode = true;
    if (!WRAPPERS.has(prog)) return;
    // Skip the wrapper's own options (and VAR=value for env) to reach the wrapped program.
    i++;
    while (i < argv.length && (argv[i]!.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[i]!) || (prog === 'timeout' && /^\d/.test(argv[i]!)))) {
      const opt = argv[i]!;
      i++;
      // sudo -u USER / -g GROUP and similar options that take a value.
      if ((prog === 'sudo' || prog === 'doas' || prog === 'su') && /^-[ugCDhprRtTU]$/.test(opt)) i++;
    }
  }
}

function basename(p: string): string {
  const s = p.lastIndexOf('/');
  return s >= 0 && s < p.length - 1 ? p.slice(s + 1) : p;
}

function wordText(w: unknown): string {
  if (!isObj(w)) return '';
  const parts = (w.Parts as unknown[] | null) ?? [];
  let out = '';
  for (const p of parts) out += partText(p);
  return out;
}

// Lit values keep their backslashes as written: `r\m` runs rm, `'\''` is a quote. Unquoted, a
// backslash quotes the next character (and a backslash-newline disappears); in double quotes only
// before $ ` " \ and newline.
const UNQUOTED_ESC = /\\(\n|[\s\S])/g;
const DQ_ESC = /\\([$`"\\\n])/g;

const ANSI_C: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };

/** `$'…'` (ANSI-C quoting): `$'\x72m'` is rm. */
function ansiC(v: string): string {
  return v.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|[\s\S])/g, (m, e: string) => {
    if (e[0] === 'x' || e[0] === 'u' || e[0] === 'U') {
      const cp = parseInt(e.slice(1), 16);
      return cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8) & 0xff);
    if (e[0] === 'c' && e.length === 2) return String.fromCharCode(e.charCodeAt(1) & 0x1f);
    return ANSI_C[e] ?? m;
  });
}

function partText(p: unknown, dq = false): string {
  if (!isObj(p)) return '';
  const t = sh.syntax.NodeType(p);
  if (t === 'Lit') return String(p.Value ?? '').replace(dq ? DQ_ESC : UNQUOTED_ESC, (_, c: string) => (c === '\n' ? '' : c));
  if (t === 'SglQuoted') return p.Dollar === true ? ansiC(String(p.Value ?? '')) : String(p.Value ?? '');
  if (t === 'DblQuoted') return ((p.Parts as unknown[] | null) ?? []).map((x) => partText(x, true)).join('');
  // Parameter expansions, command substitutions, arithmetic: the value is only known when run.
  return '$';
}

// ---------------------------------------------------------------------------------------------- URL

export interface UrlFacts {
  scheme: string;
  host: string;
  /** Registrable domain (public-suffix aware, ICANN and private sections); '' for IPs and bare suffixes. */
  domain: string;
  ip: boolean;
  port: number;
  path: string;
}

const urlCache = new Lru<UrlFacts>(FACT_LIMITS.cacheEntries);
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'ws:': 80, 'wss:': 443, 'ftp:': 21 };

/** WHATWG URL reading (what Node and browsers request): `http://good.com@evil.com` is evil.com, `0x7f.1` is 127.0.0.1. */
export function urlFacts(v: unknown): UrlFacts {
  const s = text(v, 'URL', FACT_LIMITS.urlChars).trim();
  const hit = urlCache.get(s);
  if (hit) return hit;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new FactParseError('URL does not parse (absolute URL expected)');
  }
  let host = u.hostname.toLowerCase();
  const ip = /^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith('[');
  if (host.startsWith('[')) host = host.slice(1, -1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  const scheme = u.protocol.slice(0, -1);
  const port = u.port !== '' ? Number(u.port) : (DEFAULT_PORTS[u.protocol] ?? 0);
  const domain = ip || host === '' ? '' : (parseDomain(host, { allowPrivateDomains: true }).domain ?? '');
  const facts: UrlFacts = { scheme, host, domain, ip, port, path: u.pathname };
  urlCache.set(s, facts);
  return facts;
}
