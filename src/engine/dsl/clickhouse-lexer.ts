/**
 * ClickHouse SQL lexer (issue #28, docs/dsl.md "SQL dialects"): a real tokenizer following ClickHouse's
 * own Lexer.cpp rules, so the statement classifier (clickhouse-sql.ts) works on tokens, never on regex
 * matches over the text. Comments (`--`, `# `, `/* *\/`) and whitespace are dropped; strings
 * keep their decoded value; identifiers keep whether they were quoted (a quoted name is never a keyword).
 * Anything ClickHouse's lexer would reject, or that this one does not know, throws FactParseError
 * (cannot evaluate: the condition fails closed).
 */
import { FactParseError } from './fact-errors.js';

export type TokKind = 'word' | 'qident' | 'string' | 'number' | 'op' | 'param';

export interface Tok {
  kind: TokKind;
  /** word: as written; qident/string: decoded value; number/op/param: as written. */
  text: string;
  /** Upper-case text of an unquoted word, '' otherwise: the keyword test. */
  kw: string;
  /** Offset in the source, for errors and to cut inline INSERT data. */
  at: number;
  end: number;
}

const isDigit = (c: string): boolean => c >= '0' && c <= '9';

const isWord = (c: string): boolean => isWordStart(c) || isDigit(c) || c === '$';
// ASCII and Unicode white space (ClickHouse skips UTF-8 spaces such as U+00A0 too): reading one as
// white space where ClickHouse would not only makes a statement ClickHouse rejects look valid here.
const isSpace = (c: string): boolean => c === ' ' || c === '\n' || c === '\t' || c === '\r' || (c > '\x7f' || c === '\f' || c === '\v' ? /\s/u.test(c) : false);
const isWordStart = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || (c > '\x7f' && !isSpace(c));

// Longest first: the lexer takes the longest operator at each position, as ClickHouse's does.
const OPS = ['<=>', '->', '::', '||', '==', '!=', '<>', '<=', '>=', '(', ')', '[', ']', '{', '}', ',', ';', '.', '+', '-', '*', '/', '%', '=', '<', '>', '?', ':', '^', '@'];

const ESCAPES: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0', a: '\x07', v: '\v', e: '\x1b' };

/** A quoted run (`'…'`, `"…"`, `` `…` ``): backslash escapes and the doubled quote, as ClickHouse reads them. */
function quoted(s: string, i: number, q: string): [string, number] {
  let out = '';
  let j = i + 1;
  while (j < s.length) {
    const c = s[j]!;
    if (c === '\\') {
      if (j + 1 >= s.length) break;
      const n = s[j + 1]!;
      if (n === 'x' && /^[0-9a-fA-F]{2}$/.test(s.slice(j + 2, j + 4))) {
        out += String.fromCharCode(parseInt(s.slice(j + 2, j + 4), 16));
        j += 4;
      } else {
        out += ESCAPES[n] ?? n;
        j += 2;
      }
      continue;
    }
    if (c === q) {
      if (s[j + 1] === q) {
        out += q;
        j += 2;
        continue;
      }
      return [out, j + 1];
    }
    out += c;
    j++;
  }
  throw new FactParseError(`SQL (clickhouse): unterminated ${q === "'" ? 'string' : 'quoted identifier'} at ${i}`);
}

/** Number literal: decimal, 0x/0b, floats with exponents, hex floats; a word char right after is an error. */
function number(s: string, i: number): number {
  let j = i;
  if (s[j] === '0' && (s[j + 1] === 'x' || s[j + 1] === 'X')) {
    j += 2;
    while (j < s.length && /[0-9a-fA-F_.pP]/.test(s[j]!)) j += s[j] === 'p' || s[j] === 'P' ? (s[j + 1] === '-' || s[j + 1] === '+' ? 2 : 1) : 1;
  } else if (s[j] === '0' && (s[j + 1] === 'b' || s[j + 1] === 'B') && (s[j + 2] === '0' || s[j + 2] === '1')) {
    j += 2;
    while (j < s.length && (s[j] === '0' || s[j] === '1' || s[j] === '_')) j++;
  } else {
    while (j < s.length && (isDigit(s[j]!) || s[j] === '_')) j++;
    if (s[j] === '.' && !(s[j + 1] === '.')) {
      j++;
      while (j < s.length && isDigit(s[j]!)) j++;
    }
    if ((s[j] === 'e' || s[j] === 'E') && (isDigit(s[j + 1] ?? '') || ((s[j + 1] === '-' || s[j + 1] === '+') && isDigit(s[j + 2] ?? '')))) {
      j += 2;
      while (j < s.length && isDigit(s[j]!)) j++;
    }
  }
  if (j < s.length && isWordStart(s[j]!)) throw new FactParseError(`SQL (clickhouse): malformed number at ${i}`);
  return j;
}

export function lexClickHouse(s: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  // Where the current statement began and its bracket depth: to find INSERT … FORMAT <name> data.
  let stmt = 0;
  let depth = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (isSpace(c)) {
      i++;
      continue;
    }
    // Comments: `--`, `# ` and `#!` run to the end of the line; `/* */` nests, as in ClickHouse
    // (another `#` is an error there, and here).
    if (c === '#' && s[i + 1] !== ' ' && s[i + 1] !== '!') throw new FactParseError(`SQL (clickhouse): unexpected '#' at ${i}`);
    if ((c === '-' && s[i + 1] === '-') || c === '#') {
      while (i < s.length && s[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && s[i + 1] === '*') {
      // Recent ClickHouse nests block comments, older releases (18.16 here) end one at the first */:
      // `/* /* */ ; DROP TABLE t; /* */ -- */` is one comment to the first and a DROP to the second.
      // A `/*` inside a comment is read both ways by no one here: it cannot be evaluated.
      const close = s.indexOf('*/', i + 2);
      if (close < 0) throw new FactParseError(`SQL (clickhouse): unterminated comment at ${i}`);
      if (s.slice(i + 2, close).includes('/*')) throw new FactParseError(`SQL (clickhouse): a comment inside a comment at ${i} (ClickHouse releases read it differently)`);
      i = close + 2;
      continue;
    }
    const start = i;
    if (c === "'") {
      const [v, j] = quoted(s, i, "'");
      toks.push({ kind: 'string', text: v, kw: '', at: start, end: j });
      i = j;
      continue;
    }
    if (c === '"' || c === '`') {
      const [v, j] = quoted(s, i, c);
      toks.push({ kind: 'qident', text: v, kw: '', at: start, end: j });
      i = j;
      continue;
    }
    // Heredoc strings: $$…$$ and $tag$…$tag$.
    if (c === '$') {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(s.slice(i, i + 66));
      if (!m) throw new FactParseError(`SQL (clickhouse): unexpected '$' at ${i}`);
      const close = s.indexOf(m[0], i + m[0].length);
      if (close < 0) throw new FactParseError(`SQL (clickhouse): unterminated heredoc at ${i}`);
      toks.push({ kind: 'string', text: s.slice(i + m[0].length, close), kw: '', at: start, end: close + m[0].length });
      i = close + m[0].length;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(s[i + 1] ?? '') && !isTupleAccess(toks))) {
      const j = number(s, i);
      toks.push({ kind: 'number', text: s.slice(i, j), kw: '', at: start, end: j });
      i = j;
      continue;
    }
    if (isWordStart(c)) {
      let j = i + 1;
      while (j < s.length && isWord(s[j]!)) j++;
      const w = s.slice(i, j);
      toks.push({ kind: 'word', text: w, kw: w.toUpperCase(), at: start, end: j });
      i = j;
      // INSERT … FORMAT <name> data: the data is not SQL. As clickhouse-client reads a multi-statement
      // text, it runs to the end of the line (Values rows are SQL and lex on); the next line is a new statement.
      const prev = toks[toks.length - 2];
      // Only for INSERT … FORMAT without a query: `INSERT … SELECT … FORMAT CSV; DROP …` has no data.
      if (depth === 0 && toks[stmt]?.kw === 'INSERT' && prev?.kw === 'FORMAT' && toks.length - 2 > stmt && w.toUpperCase() !== 'VALUES' && !toks.slice(stmt).some((x) => x.kw === 'SELECT' || x.kw === 'WITH')) {
        const eol = s.indexOf('\n', i);
        const data = s.slice(i, eol < 0 ? s.length : eol);
        // Where a client ends inline data differs (the line's end, or a `;`): a `;` in it cannot be evaluated.
        if (data.includes(';')) throw new FactParseError(`SQL (clickhouse): inline INSERT data with ';' at ${i} (clients end it differently)`);
        i = eol < 0 ? s.length : eol + 1;
        toks.push({ kind: 'op', text: ';', kw: '', at: i, end: i });
        stmt = toks.length;
      }
      continue;
    }
    // Query parameters {name:Type} are values the server substitutes: one opaque token (a map literal
    // starts with a string key, `{'a': 1}`, and lexes as operators).
    if (c === '{' && /^\{\s*[A-Za-z_][A-Za-z0-9_]*\s*:/.test(s.slice(i, i + 80))) {
      const close = s.indexOf('}', i);
      if (close < 0) throw new FactParseError(`SQL (clickhouse): unterminated parameter at ${i}`);
      toks.push({ kind: 'param', text: s.slice(i, close + 1), kw: '', at: start, end: close + 1 });
      i = close + 1;
      continue;
    }
    const op = OPS.find((o) => s.startsWith(o, i));
    if (!op) throw new FactParseError(`SQL (clickhouse): unexpected character ${JSON.stringify(c)} at ${i}`);
    toks.push({ kind: 'op', text: op, kw: '', at: start, end: i + op.length });
    i += op.length;
    if (op === '(' || op === '[' || op === '{') depth++;
    else if ((op === ')' || op === ']' || op === '}') && depth > 0) depth--;
    else if (op === ';') {
      stmt = toks.length;
      depth = 0;
    }
  }
  return toks;
}

// `t.1` (tuple element) lexes as `.` `1`, not as the number `.1`.
function isTupleAccess(toks: Tok[]): boolean {
  const p = toks[toks.length - 1];
  return p !== undefined && (p.kind === 'word' || p.kind === 'qident' || (p.kind === 'op' && (p.text === ')' || p.text === ']')));
}
