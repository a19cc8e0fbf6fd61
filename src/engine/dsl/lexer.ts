/** Tokeniser for string conditions. Positions are 0-based offsets into the expression. */
import { durationMultiplier, sizeMultiplier } from './literals.js';

export type TokenType =
  | 'ident'
  | 'number'
  | 'string'
  | 'op'
  | 'lparen'
  | 'rparen'
  | 'lbrack'
  | 'rbrack'
  | 'comma'
  | 'colon'
  | 'dot'
  | 'eof';

export interface Token {
  type: TokenType;
  /** Identifier/operator text, or the decoded string value. */
  text: string;
  /** Numeric value for number tokens (after unit scaling). */
  num?: number;
  unit?: 'size' | 'duration';
  offset: number;
  end: number;
}

export class LexError {
  constructor(
    readonly message: string,
    readonly offset: number,
  ) {}
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isIdentStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isIdentPart = (c: number): boolean => isIdentStart(c) || isDigit(c);

// No \b or \f: in conditions "\b" is far more likely a regex word boundary than a backspace.
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', "'": "'", '\\': '\\', '/': '/' };

/** Splits the whole expression into tokens; throws LexError with the offending offset. */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) {
      i++;
      continue;
    }
    const start = i;
    // `$t3` (an ACM guard's reference to task t3's recorded output, docs/acm.md): the compiler accepts it
    // only in guards (DslCompileOptions.allowTaskRefs); elsewhere it is a parse problem at this offset.
    if (isIdentStart(c) || (c === 36 /* $ */ && i + 1 < n && isIdentStart(src.charCodeAt(i + 1)))) {
      i++;
      while (i < n && isIdentPart(src.charCodeAt(i))) i++;
      out.push({ type: 'ident', text: src.slice(start, i), offset: start, end: i });
      continue;
    }
    if (isDigit(c) || (c === 45 /* - */ && i + 1 < n && isDigit(src.charCodeAt(i + 1)) && negativeAllowed(out))) {
      i = lexNumber(src, i, out);
      continue;
    }
    if (c === 34 || c === 39) {
      i = lexString(src, i, out);
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === '>=' || two === '<=' || two === '==' || two === '!=' || two === '&&' || two === '||') {
      out.push({ type: 'op', text: two, offset: start, end: i + 2 });
      i += 2;
      continue;
    }
    const ch = src[i]!;
    const single: Record<string, TokenType> = {
      '(': 'lparen',
      ')': 'rparen',
      '[': 'lbrack',
      ']': 'rbrack',
      ',': 'comma',
      ':': 'colon',
      '.': 'dot',
      '>': 'op',
      '<': 'op',
      '!': 'op',
    };
    const t = single[ch];
    if (t === undefined) {
      if (ch === '=') throw new LexError("unexpected '=' (use '==' for equality)", start);
      throw new LexError(`unexpected character ${JSON.stringify(ch)}`, start);
    }
    out.push({ type: t, text: ch, offset: start, end: i + 1 });
    i++;
  }
  out.push({ type: 'eof', text: '', offset: n, end: n });
  return out;
}

/** A leading '-' is a sign only where a value may start (not after a value: `a -1` is still an error later). */
function negativeAllowed(out: Token[]): boolean {
  const prev = out[out.length - 1];
  return !prev || prev.type === 'op' || prev.type === 'lparen' || prev.type === 'lbrack' || prev.type === 'comma' || prev.type === 'colon' || (prev.type === 'ident' && /^(?:contains|matches|not|and|or)$/i.test(prev.text));
}

function lexNumber(src: string, i: number, out: Token[]): number {
  const start = i;
  const n = src.length;
  if (src[i] === '-') i++;
  while (i < n && isDigit(src.charCodeAt(i))) i++;
  if (src[i] === '.' && i + 1 < n && isDigit(src.charCodeAt(i + 1))) {
    i++;
    while (i < n && isDigit(src.charCodeAt(i))) i++;
  }
  let value = Number(src.slice(start, i));
  let unit: 'size' | 'duration' | undefined;
  if (i < n && isIdentStart(src.charCodeAt(i))) {
    const us = i;
    while (i < n && isIdentPart(src.charCodeAt(i))) i++;
    const suffix = src.slice(us, i);
    const size = sizeMultiplier(suffix);
    const dur = size === undefined ? durationMultiplier(suffix) : undefined;
    if (size !== undefined) {
      value *= size;
      unit = 'size';
    } else if (dur !== undefined) {
      value *= dur;
      unit = 'duration';
    } else {
      throw new LexError(`unknown unit '${suffix}' (sizes: B, KB, MB, GB, TB, KiB..TiB; durations: ms, s, m, h, d, w)`, us);
    }
  }
  if (!Number.isFinite(value)) throw new LexError('number out of range', start);
  out.push({ type: 'number', text: src.slice(start, i), num: value, unit, offset: start, end: i });
  return i;
}

function lexString(src: string, i: number, out: Token[]): number {
  const start = i;
  const quote = src[i]!;
  const n = src.length;
  i++;
  let value = '';
  let runStart = i;
  while (i < n && src[i] !== quote) {
    if (src[i] === '\\') {
      value += src.slice(runStart, i);
      const e = src[i + 1];
      if (e === undefined) break;
      if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
        value += String.fromCharCode(parseInt(src.slice(i + 2, i + 6), 16));
        i += 6;
      } else if (ESCAPES[e] !== undefined) {
        value += ESCAPES[e];
        i += 2;
      } else {
        // Unknown escapes stay verbatim so regexes like "\d{3}" work without doubling.
        value += '\\' + e;
        i += 2;
      }
      runStart = i;
      continue;
    }
    i++;
  }
  if (i >= n) throw new LexError('unterminated string', start);
  value += src.slice(runStart, i);
  out.push({ type: 'string', text: value, offset: start, end: i + 1 });
  return i + 1;
}
