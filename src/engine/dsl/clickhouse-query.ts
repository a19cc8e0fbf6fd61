/**
 * ClickHouse query bodies (SELECT/WITH, the expressions of mutations, VALUES rows) for the node-sql-parser
 * grammars (issue #28, docs/dsl.md "SQL dialects"). node-sql-parser has no ClickHouse grammar, so the
 * tokens are normalised first: clauses that change neither which tables are read nor which functions run
 * are dropped (FINAL, SAMPLE, SETTINGS, FORMAT, WITH TOTALS, GLOBAL, ANY/ALL/SEMI/ANTI/ASOF join
 * strictness), and clauses that hold expressions but have no counterpart there (PREWHERE, ARRAY JOIN,
 * LIMIT n BY, scalar `WITH expr AS name`) are cut out and analysed on their own as `SELECT <exprs>`, so
 * their subqueries and functions still count. What still does not parse fails closed (FactParseError).
 */
import { StewardError } from '../../errors.js';
import { FactParseError } from './fact-errors.js';
import type { Tok } from './clickhouse-lexer.js';
import { kw, op, syn } from './clickhouse-cursor.js';
import { analyse, astify, emptyFacts, mergeFacts, type Grammar, type SqlFacts } from './sql-ast.js';

const isName = (t: Tok | undefined): boolean => t !== undefined && (t.kind === 'word' || t.kind === 'qident');

// Keywords that end a clause (at the clause's own bracket depth).
const CLAUSE_END = new Set(['WHERE', 'PREWHERE', 'GROUP', 'ORDER', 'HAVING', 'LIMIT', 'OFFSET', 'SETTINGS', 'FORMAT', 'UNION', 'EXCEPT', 'INTERSECT', 'WINDOW', 'QUALIFY', 'FROM', 'SELECT', 'INTO']);
const JOIN_WORDS = new Set(['JOIN', 'LEFT', 'RIGHT', 'INNER', 'FULL', 'CROSS', 'OUTER', 'ARRAY', 'GLOBAL', 'ANY', 'ALL', 'ASOF', 'SEMI', 'ANTI', 'PASTE', 'ON', 'USING']);

/** Index of the first token from i (at the same depth) that ends the clause: a clause keyword, `,` if asked, an unmatched closer, `;`, or the end. */
export function clauseEnd(t: Tok[], i: number, opts: { comma?: boolean; join?: boolean; noWords?: boolean } = {}): number {
  let depth = 0;
  for (let j = i; j < t.length; j++) {
    const x = t[j]!;
    if (x.kind === 'op') {
      if (x.text === '(' || x.text === '[' || x.text === '{') depth++;
      else if (x.text === ')' || x.text === ']' || x.text === '}') {
        if (depth === 0) return j;
        depth--;
      } else if (depth === 0 && (x.text === ';' || (opts.comma && x.text === ','))) return j;
    } else if (depth === 0 && x.kind === 'word' && !opts.noWords && (CLAUSE_END.has(x.kw) || (opts.join && JOIN_WORDS.has(x.kw)))) return j;
  }
  return t.length;
}

/** Index of the closer matching the opener at i. */
export function matching(t: Tok[], i: number): number {
  let depth = 0;
  for (let j = i; j < t.length; j++) {
    const x = t[j]!;
    if (x.kind !== 'op') continue;
    if (x.text === '(' || x.text === '[' || x.text === '{') depth++;
    else if (x.text === ')' || x.text === ']' || x.text === '}') if (--depth === 0) return j;
  }
  throw new FactParseError('SQL (clickhouse): unbalanced brackets');
}

interface Normalised {
  toks: Tok[];
  outfile: boolean;
  /** Expression lists cut out of the query, each analysed as `SELECT <exprs>`. */
  fragments: Tok[][];
}

function normalise(t: Tok[]): Normalised {
  const out: Tok[] = [];
  const fragments: Tok[][] = [];
  // For `quantile(0.9)(x)`: whether each open bracket began a function call.
  const calls: boolean[] = [];
  let outfile = false;
  let i = 0;
  while (i < t.length) {
    const x = t[i]!;
    const next = t[i + 1];
    const prev = out[out.length - 1];
    if (x.kind === 'word') {
      if (x.kw === 'GLOBAL' && (kw(next, 'IN', 'NOT') || (next?.kind === 'word' && JOIN_WORDS.has(next.kw)))) {
        i++;
        continue;
      }
      if (kw(x, 'ANY', 'ALL', 'ASOF', 'SEMI', 'ANTI') && (kw(next, 'JOIN', 'LEFT', 'RIGHT', 'INNER', 'FULL') || (kw(prev, 'LEFT', 'RIGHT', 'INNER', 'FULL', 'OUTER') && kw(next, 'JOIN')))) {
        i++;
        continue;
      }
      if (x.kw === 'FINAL' && (isName(prev) || op(prev, ')')) && !op(next, '(') && !op(next, '.')) {
        i++;
        continue;
      }
      if (x.kw === 'SAMPLE' && (isName(prev) || op(prev, ')')) && next?.kind === 'number') {
        i += 2;
        if (op(t[i], '/')) i += 2;
        if (kw(t[i], 'OFFSET')) {
          i += 2;
          if (op(t[i], '/')) i += 2;
        }
        continue;
      }
      if (x.kw === 'PREWHERE') {
        const e = clauseEnd(t, i + 1);
        fragments.push(t.slice(i + 1, e));
        i = e;
        continue;
      }
      if (x.kw === 'ARRAY' && kw(next, 'JOIN')) {
        if (kw(prev, 'LEFT', 'INNER')) out.pop();
        const e = clauseEnd(t, i + 2, { join: true });
        fragments.push(t.slice(i + 2, e));
        i = e;
        continue;
      }
      if (x.kw === 'LIMIT') {
        const e = clauseEnd(t, i + 1);
        const by = t.slice(i + 1, e).findIndex((y) => kw(y, 'BY'));
        if (by >= 0) {
          // LIMIT n BY exprs: the BY list runs to the next clause.
          fragments.push(t.slice(i + 2 + by, e));
          i = e;
          continue;
        }
        // LIMIT a, b (MySQL form) → LIMIT b OFFSET a.
        const comma = t.slice(i + 1, e).findIndex((y) => op(y, ','));
        if (comma >= 0) {
          out.push(x, ...t.slice(i + 2 + comma, e), syn('word', 'OFFSET'), ...t.slice(i + 1, i + 1 + comma));
          i = e;
          continue;
        }
      }
      if (x.kw === 'SETTINGS' && !kw(prev, 'AS') && !op(prev, ',')) {
        // Only a well-formed `name = literal, …` list ending the clause is dropped: `settings` as an
        // alias (`FROM t AS settings JOIN secrets …`) must stay for the grammar to read what follows.
        const e = settingsEnd(t, i + 1);
        if (t.slice(i + 1, clauseEnd(t, i + 1)).some((y) => kw(y, 'SELECT'))) throw new FactParseError('SQL (clickhouse): a query inside SETTINGS is not understood');
        if (e > 0) {
          i = e;
          continue;
        }
      }
      if (x.kw === 'INTO' && kw(next, 'OUTFILE')) {
        // SELECT … INTO OUTFILE 'f': clickhouse-client writes a local file; it counts as written `outfile()`.
        outfile = true;
        i = clauseEnd(t, i + 2);
        continue;
      }
      // FORMAT name ends a query (SETTINGS may follow): `SELECT format FROM t` is a column.
      if (x.kw === 'FORMAT' && isName(next) && (i + 2 === t.length || op(t[i + 2], ';') || op(t[i + 2], ')') || kw(t[i + 2], 'SETTINGS'))) {
        i += 2;
        continue;
      }
      if (x.kw === 'WITH' && kw(next, 'TOTALS', 'ROLLUP', 'CUBE')) {
        i += 2;
        continue;
      }
      if (x.kw === 'USING' && !op(next, '(')) {
        const e = clauseEnd(t, i + 1, { join: true });
        out.push(x, syn('op', '('), ...t.slice(i + 1, e), syn('op', ')'));
        i = e;
        continue;
      }
      if (x.kw === 'WITH' && !kw(next, 'RECURSIVE', 'FILL', 'TIES')) {
        i = withList(t, i, out, fragments);
        continue;
      }
    }
    // CAST(x AS Nullable(String)) / x::UInt8: ClickHouse type names mean nothing there; TEXT stands in.
    if (x.kind === 'word' && x.kw === 'CAST' && op(next, '(')) {
      const close = matching(t, i + 1);
      let as = -1;
      for (let j = i + 2, d = 0; j < close; j++) {
        if (op(t[j], '(')) d++;
        else if (op(t[j], ')')) d--;
        else if (d === 0 && kw(t[j], 'AS')) as = j;
      }
      if (as > 0) {
        out.push(x, t[i + 1]!);
        calls.push(true);
        const inner = normalise(t.slice(i + 2, as));
        fragments.push(...inner.fragments);
        outfile ||= inner.outfile;
        out.push(...inner.toks, t[as]!, syn('word', 'TEXT'));
        i = close;
        continue;
      }
    }
    if (x.kind === 'op' && x.text === '::' && next?.kind === 'word') {
      out.push(x, syn('word', 'TEXT'));
      i = op(t[i + 2], '(') ? matching(t, i + 2) + 1 : i + 2;
      continue;
    }
    // Tuple element t.1: the tuple is what is read.
    if (op(x, '.') && next?.kind === 'number' && (isName(prev) || op(prev, ')'))) {
      i += 2;
      continue;
    }
    // `* EXCEPT (a, b)`, `* REPLACE (expr AS a)`, `* APPLY (f)`: column transformers; REPLACE's expressions count.
    if (x.kind === 'word' && kw(x, 'EXCEPT', 'REPLACE', 'APPLY') && op(prev, '*')) {
      const close = op(next, '(') ? matching(t, i + 1) : i + 1;
      if (x.kw === 'REPLACE' && op(next, '(')) fragments.push(t.slice(i + 2, close));
      else if (t.slice(i + 1, close).some((y) => kw(y, 'SELECT'))) throw new FactParseError(`SQL (clickhouse): a query inside * ${x.kw} is not understood`);
      i = close + 1;
      continue;
    }
    // Map literal {'a': 1, 'b': 2} → map('a', 1, 'b', 2).
    if (op(x, '{')) {
      const close = matching(t, i);
      const inner: Tok[] = [];
      for (let j = i + 1, d = 0; j < close; j++) {
        const y = t[j]!;
        if (op(y, '(') || op(y, '[') || op(y, '{')) d++;
        else if (op(y, ')') || op(y, ']') || op(y, '}')) d--;
        inner.push(d === 0 && op(y, ':') ? syn('op', ',') : y);
      }
      const n = normalise(inner);
      fragments.push(...n.fragments);
      outfile ||= n.outfile;
      out.push(syn('word', 'map'), syn('op', '('), ...n.toks, syn('op', ')'));
      i = close + 1;
      continue;
    }
    if (x.kind === 'op') {
      if (x.text === '==') {
        out.push(syn('op', '='));
        i++;
        continue;
      }
      if (x.text === '(' || x.text === '[') {
        calls.push(x.text === '(' && (prev?.kind === 'word' || prev?.kind === 'qident'));
        // A bare array literal [1, 2] is ARRAY[1, 2] there.
        if (x.text === '[' && !(isName(prev) || op(prev, ')') || op(prev, ']'))) out.push(syn('word', 'ARRAY'));
      } else if (x.text === ')' || x.text === ']') {
        const wasCall = calls.pop() ?? false;
        // Parametric aggregate quantile(0.9)(x): one call with all arguments.
        if (x.text === ')' && wasCall && op(next, '(')) {
          if (!op(t[i + 2], ')')) out.push(syn('op', ','));
          calls.push(true);
          i += 2;
          continue;
        }
      }
    }
    out.push(x);
    i++;
  }
  return { toks: out, fragments, outfile };
}

/** End of a SETTINGS list `name = literal[, …]` starting at i that ends its clause; -1 when it is not one. */
export function settingsEnd(t: Tok[], i: number, ends = ['FORMAT', 'UNION', 'EXCEPT', 'INTERSECT', 'INTO']): number {
  let j = i;
  for (;;) {
    if (!isName(t[j]) || !op(t[j + 1], '=')) return -1;
    j += 2;
    if (op(t[j], '-')) j++;
    const v = t[j];
    if (!v) return -1;
    if (v.kind === 'string' || v.kind === 'number' || v.kind === 'param' || kw(v, 'TRUE', 'FALSE', 'NULL')) j++;
    else if (op(v, '{') || op(v, '[') || op(v, '(')) j = matching(t, j) + 1;
    else return -1;
    if (!op(t[j], ',')) break;
    j++;
  }
  const end = t[j];
  return end === undefined || op(end, ';') || op(end, ')') || kw(end, ...ends) ? j : -1;
}

/** A WITH list: standard CTEs (`name AS (query)`) stay; ClickHouse scalars (`expr AS name`) become fragments. */
function withList(t: Tok[], i: number, out: Tok[], fragments: Tok[][]): number {
  let j = i + 1;
  const kept: Tok[][] = [];
  for (;;) {
    const e = clauseEnd(t, j, { comma: true });
    const item = t.slice(j, e);
    const cte = isName(item[0]) && ((kw(item[1], 'AS') && op(item[2], '(')) || (op(item[1], '(') && kw(item[matching(item, 1) + 1], 'AS')));
    if (cte) kept.push(item);
    else {
      // `expr AS name`: the expression only.
      const as = item.length >= 2 && kw(item[item.length - 2], 'AS') ? item.length - 2 : item.length;
      fragments.push(item.slice(0, as));
    }
    if (!op(t[e], ',')) {
      if (kept.length > 0) {
        out.push(t[i]!);
        kept.forEach((k, n) => out.push(...(n > 0 ? [syn('op', ',')] : []), ...k));
      }
      return e;
    }
    j = e + 1;
  }
}

const PLAIN_NUMBER = /^\d+(\.\d*)?([eE][-+]?\d+)?$/;

/** Text for one grammar: identifiers quoted its way, strings reduced to safe characters (only their presence matters). */
function emit(t: Tok[], g: Grammar): string {
  let s = '';
  for (const x of t) {
    let piece: string;
    if (x.kind === 'qident') piece = g === 'mysql' ? '`' + x.text.replace(/`/g, '``') + '`' : '"' + x.text.replace(/"/g, '""') + '"';
    else if (x.kind === 'string') piece = "'" + x.text.replace(/[^A-Za-z0-9 _.:/@-]/g, '_') + "'";
    else if (x.kind === 'number') piece = PLAIN_NUMBER.test(x.text) ? x.text : '0';
    else if (x.kind === 'param') piece = 'NULL';
    else piece = x.text;
    s += s === '' || piece === '.' || s.endsWith('.') ? piece : ' ' + piece;
  }
  return s;
}

/** Facts of one ClickHouse statement given to the grammars (a query, or a mutation rewritten as DELETE/UPDATE). */
export function delegate(t: Tok[], what: string): SqlFacts {
  const n = normalise(t);
  let facts: SqlFacts | undefined;
  let lastErr = '';
  for (const g of ['postgresql', 'mysql'] as const) {
    try {
      const stmts = astify(emit(n.toks, g), g);
      if (stmts.length !== 1) throw new Error(`${stmts.length} statements`);
      facts = analyse(stmts);
      break;
    } catch (e) {
      if (!(e instanceof Error) || e instanceof StewardError) throw e;
      lastErr = e.message;
    }
  }
  if (!facts) throw new FactParseError(`SQL (clickhouse) ${what} does not parse: ${lastErr.slice(0, 160)}`);
  const parts = n.fragments.map((f) => expressions(f, what));
  if (n.outfile) parts.push({ ...emptyFacts(), written: ['outfile()'] });
  return mergeFacts([facts, ...parts]);
}

/** Facts of an expression list (no statement kind): its functions, subqueries, table functions. */
export function expressions(t: Tok[], what: string): SqlFacts {
  if (t.length === 0) return emptyFacts();
  const f = delegate([syn('word', 'SELECT'), ...t], what);
  return { ...f, statements: [] };
}
