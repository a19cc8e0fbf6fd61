/**
 * Protocol-aware facts (issue #28, docs/dsl.md "Facts from the action itself", spec-decisions
 * "Protocol-aware facts"): SQL, shell and URL text parsed by real parsers, so conditions judge what an
 * action does rather than keywords in a string or fields the agent fills in. Pure: no fs, no network.
 * Text that does not parse, or exceeds the size/nesting limits, throws FactParseError (a
 * STEWARD_DSL_EVAL: the condition cannot be evaluated and the stage fails closed) unless the author
 * wraps the call in if_unparsed(call, default) (parse errors only, never limits). Parses are cached per text (bounded LRU).
 */
import sqlParser from 'node-sql-parser';
import sh from 'mvdan-sh';
import { parse as parseDomain } from 'tldts';
import { StewardError } from '../../errors.js';

/** An unparseable or oversized input: the only error if_unparsed() turns into its default. */
export class FactParseError extends StewardError {
  constructor(message: string) {
    super('STEWARD_DSL_EVAL', `${message}: cannot evaluate`);
  }
}

/** Input beyond the size/nesting limits: cannot evaluate, and if_unparsed() does not recover it (padding must not buy an opt-out). */
export class FactLimitError extends StewardError {
  constructor(message: string) {
    super('STEWARD_DSL_EVAL', `${message}: cannot evaluate`);
  }
}

export const FACT_LIMITS = { sqlChars: 20_000, shellChars: 10_000, urlChars: 4_096, nesting: 64, shellDepth: 4, cacheEntries: 512 } as const;

export const SQL_DIALECTS = ['postgresql', 'mysql', 'sqlite', 'clickhouse'] as const;
export type SqlDialect = (typeof SQL_DIALECTS)[number];

// node-sql-parser has no ClickHouse grammar: ClickHouse text is read with the MySQL grammar (closest
// syntax: backquoted identifiers, db.table), then the others (spec-decisions, protocol-aware facts).
const GRAMMARS: Record<SqlDialect, string[]> = {
  postgresql: ['postgresql', 'mysql', 'sqlite'],
  mysql: ['mysql', 'postgresql', 'sqlite'],
  sqlite: ['sqlite', 'postgresql', 'mysql'],
  clickhouse: ['mysql', 'postgresql', 'sqlite'],
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

export interface SqlFacts {
  statements: string[];
  read: string[];
  written: string[];
  dropped: string[];
  functions: string[];
  unboundedWrite: boolean;
}

const sqlCache = new Lru<SqlFacts>(FACT_LIMITS.cacheEntries);
const parser = new sqlParser.Parser();

export function isSqlDialect(s: unknown): s is SqlDialect {
  return typeof s === 'string' && (SQL_DIALECTS as readonly string[]).includes(s);
}

export function sqlFacts(v: unknown, dialect: SqlDialect = 'postgresql'): SqlFacts {
  const q = text(v, 'SQL', FACT_LIMITS.sqlChars);
  const key = `${dialect}\u0000${q}`;
  const hit = sqlCache.get(key);
  if (hit) return hit;
  let lastErr = '';
  for (const db of GRAMMARS[dialect]) {
    let ast: unknown;
    try {
      ast = parser.astify(q, { database: db });
    } catch (e) {
      lastErr = e instanceof Error ? e.message : String(e);
      continue;
    }
    const stmts = Array.isArray(ast) ? ast : [ast];
    if (stmts.length === 0) throw new FactParseError('SQL: no statement');
    const facts = analyse(stmts);
    sqlCache.set(key, facts);
    return facts;
  }
  throw new FactParseError(`SQL does not parse (${dialect}): ${lastErr.slice(0, 200)}`);
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null;

function tableName(t: Obj): string | undefined {
  const name = typeof t.table === 'string' ? t.table : undefined;
  if (!name) return undefined;
  const db = typeof t.db === 'string' && t.db !== '' ? t.db : typeof t.schema === 'string' && t.schema !== '' ? t.schema : undefined;
  return (db ? `${db}.${name}` : name).toLowerCase();
}

function tablesOf(x: unknown): string[] {
  const out: string[] = [];
  for (const t of Array.isArray(x) ? x : [x]) {
    if (isObj(t)) {
      const n = tableName(t);
      if (n) out.push(n);
      else if (Array.isArray(t.table)) out.push(...tablesOf(t.table));
    }
  }
  return out;
}

const WRITE_KINDS = new Set(['insert', 'replace', 'update', 'delete', 'truncate', 'drop', 'alter', 'create', 'rename']);

function analyse(stmts: unknown[]): SqlFacts {
  const statements: string[] = [];
  const read = new Set<string>();
  const written = new Set<string>();
  const dropped = new Set<string>();
  const functions = new Set<string>();
  let unboundedWrite = false;
  const cteNames = new Set<string>();
  const visit = (node: unknown, depth: number): void => {
    if (depth > 200) throw new FactLimitError('SQL: the statement tree nests too deep');
    if (Array.isArray(node)) {
      for (const n of node) visit(n, depth + 1);
      return;
    }
    if (!isObj(node)) return;
    if (node.type === 'function' || node.type === 'aggr_func') {
      const fname = funcName(node.name);
      if (fname) functions.add(fname.toLowerCase());
    }
    const kind = typeof node.type === 'string' ? node.type.toLowerCase() : undefined;
    if (kind && (kind === 'select' || WRITE_KINDS.has(kind)) && ('from' in node || 'table' in node || kind === 'select')) statement(node, kind, depth);
    else for (const k of Object.keys(node)) visit(node[k], depth + 1);
  };
  const statement = (s: Obj, kind: string, depth: number): void => {
    if (depth === 0) statements.push(kind);
    if (Array.isArray(s.with)) {
      for (const w of s.with as Obj[]) {
        const n = isObj(w.name) ? (w.name as Obj).value : w.name;
        if (typeof n === 'string') cteNames.add(n.toLowerCase());
        visit(w.stmt, depth + 1);
      }
    }
    const targets = kind === 'select' || kind === 'rename' ? [] : tablesOf(s.table);
    // DROP/TRUNCATE name its objects under `name` (a list of {db, table}, or a string for DROP DATABASE).
    if (kind === 'drop' || kind === 'truncate') targets.push(...(typeof s.name === 'string' ? [s.name.toLowerCase()] : tablesOf(s.name)));
    if (kind === 'delete' && targets.length === 0) targets.push(...tablesOf(s.from));
    if (kind === 'select') for (const t of tablesOf(s.from)) read.add(t);
    else if (kind === 'update' || kind === 'delete') for (const t of tablesOf(s.from)) if (!targets.includes(t)) read.add(t);
    for (const t of targets) written.add(t);
    if (kind === 'drop' || kind === 'truncate') for (const t of targets) dropped.add(t);
    if (kind === 'truncate') unboundedWrite = true;
    if ((kind === 'delete' || kind === 'update') && (s.where === null || s.where === undefined)) unboundedWrite = true;
    if (kind === 'alter' && Array.isArray(s.expr)) {
      for (const e of s.expr as Obj[]) {
        const action = typeof e.action === 'string' ? e.action.toLowerCase() : '';
        // Renaming a table away or dropping a column destroys what readers of that name relied on.
        if (action === 'rename' && e.resource === 'table') for (const t of targets) dropped.add(t);
        if (action === 'drop') for (const t of targets) dropped.add(t);
      }
    }
    // MySQL RENAME TABLE a TO b[, c TO d]: pairs; the old names are gone, both are written.
    if (kind === 'rename' && Array.isArray(s.table)) {
      for (const pair of s.table as unknown[]) {
        const [from, to] = Array.isArray(pair) ? tablesOf(pair) : [];
        if (from) {
          dropped.add(from);
          written.add(from);
        }
        if (to) written.add(to);
      }
    }
    for (const k of Object.keys(s)) if (k !== 'table' && k !== 'with' && k !== 'type') visit(s[k], depth + 1);
  };
  for (const s of stmts) {
    const kind = isObj(s) && typeof s.type === 'string' ? s.type.toLowerCase() : 'unknown';
    if (isObj(s)) statement(s, kind, 0);
  }
  for (const c of cteNames) read.delete(c);
  return { statements, read: [...read].sort(), written: [...written].sort(), dropped: [...dropped].sort(), functions: [...functions].sort(), unboundedWrite };
}

function funcName(n: unknown): string | undefined {
  if (typeof n === 'string') return n;
  if (isObj(n) && Array.isArray(n.name)) {
    return (n.name as Obj[]).map((p) => (isObj(p) ? String(p.value) : String(p))).join('.');
  }
  return undefined;
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
