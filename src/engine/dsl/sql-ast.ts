/**
 * SQL facts from node-sql-parser ASTs (issue #28, docs/dsl.md "Facts from the action itself"): the
 * grammars (loaded one by one, on first use: each per-dialect build is ~30 ms and ~2.5 MB of heap, the
 * all-dialects index ~150 ms and ~15 MB) and the walk that turns an AST into SqlFacts. Used by facts.ts
 * for postgresql/mysql/sqlite and by clickhouse-sql.ts for the parts of ClickHouse text it delegates.
 */
import { createRequire } from 'node:module';
import { FactLimitError } from './fact-errors.js';

export interface SqlFacts {
  statements: string[];
  read: string[];
  written: string[];
  dropped: string[];
  functions: string[];
  /** Table functions (FROM url(…), INSERT INTO FUNCTION s3(…)): external or computed data; also in read/written as `name()`. */
  tableFunctions: string[];
  unboundedWrite: boolean;
}

export type Grammar = 'postgresql' | 'mysql' | 'sqlite';

interface SqlParser {
  astify(sql: string, opt: { database: string }): unknown;
}

const requireCjs = createRequire(import.meta.url);
const parsers = new Map<Grammar, SqlParser>();

/** The parser of one grammar, loaded on first use (a process without SQL conditions loads none). */
function grammar(g: Grammar): SqlParser {
  let p = parsers.get(g);
  if (!p) {
    // Per-dialect builds: the package index bundles all 14 grammars.
    const mod = requireCjs(`node-sql-parser/build/${g}.js`) as { Parser: new () => SqlParser };
    p = new mod.Parser();
    parsers.set(g, p);
  }
  return p;
}

/** Parse with one grammar; the AST as a list of statements. Throws the grammar's error. */
export function astify(sql: string, g: Grammar): unknown[] {
  const ast = grammar(g).astify(sql, { database: g });
  return Array.isArray(ast) ? ast : [ast];
}

export type Obj = Record<string, unknown>;
export const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null;

function identValue(x: unknown): string | undefined {
  if (typeof x === 'string') return x;
  if (isObj(x) && isObj(x.expr) && typeof x.expr.value === 'string') return x.expr.value;
  return undefined;
}

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

// ClickHouse table functions that read a named table of some server — the local one too
// (`remote('127.0.0.1', db.customers)`): that table counts as read (or written) under its own name.
const REMOTE_TABLE_FUNCTIONS = new Set(['remote', 'remotesecure', 'cluster', 'clusterallreplicas']);

/** A FROM item that is a function call (`FROM url(…)`, `FROM generate_series(…)`): its name and the tables it names. */
function tableFunction(item: Obj): { name: string; tables: string[] } | undefined {
  const e = item.expr;
  if (!isObj(e) || e.type !== 'function') return undefined;
  const name = funcName(e.name)?.toLowerCase();
  if (!name) return undefined;
  const args = isObj(e.args) && Array.isArray(e.args.value) ? (e.args.value as unknown[]) : [];
  const tables: string[] = [];
  if (REMOTE_TABLE_FUNCTIONS.has(name)) {
    const a1 = args[1];
    const a2 = args[2];
    if (isObj(a1) && a1.type === 'column_ref') {
      const col = identValue(a1.column);
      if (col) tables.push((typeof a1.table === 'string' && a1.table !== '' ? `${a1.table}.${col}` : col).toLowerCase());
    } else if (isObj(a1) && typeof a1.value === 'string') {
      // remote('addr', 'db', 'table') or remote('addr', 'db.table')
      tables.push((isObj(a2) && typeof a2.value === 'string' ? `${a1.value}.${a2.value}` : a1.value).toLowerCase());
    }
  }
  return { name, tables };
}

const SELF_COMPARE = new Set(['=', '==', '>=', '<=', 'IS', 'LIKE']);

/** A WHERE that limits rows: every OR branch references a column, not only itself (`WHERE 1`, `WHERE 1=1`, `WHERE id = id`, `WHERE id = 1 OR 1` do not). */
function limits(e: unknown): boolean {
  if (!isObj(e)) return false;
  if (e.type === 'binary_expr' && typeof e.operator === 'string') {
    const op = e.operator.toUpperCase();
    if (op === 'AND' || op === '&&') return limits(e.left) || limits(e.right);
    if (op === 'OR' || op === '||') return limits(e.left) && limits(e.right);
    // `id = id`, `x >= x`: a column compared with itself limits nothing (NULLs aside).
    if (SELF_COMPARE.has(op) && JSON.stringify(e.left) === JSON.stringify(e.right)) return false;
  }
  return hasColumn(e, 0);
}

function hasColumn(x: unknown, depth: number): boolean {
  if (depth > 200) throw new FactLimitError('SQL: the statement tree nests too deep');
  if (Array.isArray(x)) return x.some((v) => hasColumn(v, depth + 1));
  if (!isObj(x)) return false;
  if (x.type === 'column_ref') return true;
  return Object.keys(x).some((k) => hasColumn(x[k], depth + 1));
}

const WRITE_KINDS = new Set(['insert', 'replace', 'update', 'delete', 'truncate', 'drop', 'alter', 'create', 'rename']);

export function analyse(stmts: unknown[]): SqlFacts {
  const statements: string[] = [];
  const read = new Set<string>();
  const written = new Set<string>();
  const dropped = new Set<string>();
  const functions = new Set<string>();
  const tableFunctions = new Set<string>();
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
    const sources = Array.isArray(s.from) ? (s.from as unknown[]) : [];
    for (const item of sources) {
      const tf = isObj(item) ? tableFunction(item) : undefined;
      if (!tf) continue;
      tableFunctions.add(tf.name);
      read.add(`${tf.name}()`);
      for (const t of tf.tables) read.add(t);
    }
    if (kind === 'select') for (const t of tablesOf(s.from)) read.add(t);
    else if (kind === 'update' || kind === 'delete') for (const t of tablesOf(s.from)) if (!targets.includes(t)) read.add(t);
    for (const t of targets) written.add(t);
    if (kind === 'drop' || kind === 'truncate') for (const t of targets) dropped.add(t);
    if (kind === 'truncate') unboundedWrite = true;
    if ((kind === 'delete' || kind === 'update') && !limits(s.where)) unboundedWrite = true;
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
  return {
    statements,
    read: [...read].sort(),
    written: [...written].sort(),
    dropped: [...dropped].sort(),
    functions: [...functions].sort(),
    tableFunctions: [...tableFunctions].sort(),
    unboundedWrite,
  };
}

function funcName(n: unknown): string | undefined {
  if (typeof n === 'string') return n;
  if (isObj(n) && Array.isArray(n.name)) {
    return (n.name as Obj[]).map((p) => (isObj(p) ? String(p.value) : String(p))).join('.');
  }
  return undefined;
}

/** Facts of several parts of one text, in order (statement kinds concatenated, sets united). */
export function mergeFacts(parts: SqlFacts[]): SqlFacts {
  const u = (k: 'read' | 'written' | 'dropped' | 'functions' | 'tableFunctions'): string[] => [...new Set(parts.flatMap((p) => p[k]))].sort();
  return {
    statements: parts.flatMap((p) => p.statements),
    read: u('read'),
    written: u('written'),
    dropped: u('dropped'),
    functions: u('functions'),
    tableFunctions: u('tableFunctions'),
    unboundedWrite: parts.some((p) => p.unboundedWrite),
  };
}

export const emptyFacts = (): SqlFacts => ({ statements: [], read: [], written: [], dropped: [], functions: [], tableFunctions: [], unboundedWrite: false });
