/**
 * The keyword blocklist (gate spec §2, docs/gate.md, spec-decisions D47): a phrase is caught however the text
 * spaces or hides it. Blocklisted words must not reach the user, and a reader sees "Project  Nightingale",
 * "Project⏎Nightingale", "Night<zero-width space>ingale", "Night<soft hyphen>ingale" and "Ｐroject Ｎightingale"
 * as the phrase — a literal match with single spaces let all of them through.
 *
 * Two readings, each a hit on its own: the text as sent, and the text as it reads — every character in its
 * compatibility form (NFKC taken one character at a time: fullwidth, mathematical, circled letters, ligatures,
 * no-break and other spaces as their plain forms) with invisible characters (format and other default-ignorable
 * ones: zero-width space/joiner, soft hyphen, word joiner, BOM, variation selectors, tags) removed and blank fillers
 * (Hangul fillers, Braille blank) read as a space. In both, the
 * words of a phrase may be apart by any run of whitespace or line breaks, and a keyword's accented letters match
 * composed or decomposed ("é" or "e" + U+0301). Matching is RE2 (linear in the text).
 *
 * Why not String.prototype.normalize on the draft: its canonical reordering is quadratic in a run of combining
 * marks (measured: 20 000 alternating marks 0.2 s, 200 000 11 s, 1 MB 260 s — one draft would stall the stage).
 * The fold here is one table lookup per non-ASCII character, and bounded: a text whose folded copy would exceed
 * the scan limit (one character may unfold to 18) is reported, not folded (the caller fails closed).
 */
import { RE2JS } from 're2js';
import { invisibleAt } from '../dsl/entity-chars.js';
import type { GatePattern } from './types.js';

/**
 * Between the words of a phrase: a run of whitespace of any kind. RE2's `\s` is ASCII only (`[\t\n\f\r ]`), so the
 * vertical tab, NEL and every Unicode space, line and paragraph separator (`\p{Z}`: no-break, em, ideographic,
 * U+2028…) are added.
 */
const GAP = '[\\s\\x{0B}\\x{85}\\p{Z}\\x{115F}\\x{1160}\\x{3164}\\x{FFA0}\\x{2800}]+';

/**
 * Blank fillers: letters (Hangul fillers, the Braille blank) that render as a space-wide blank, not in `\p{Z}`, so a
 * reader sees a gap between words. In GAP for the text as sent; the fold makes them a space (the Hangul ones are
 * default-ignorable, and dropping them as invisible would join the words they separate).
 */
const isBlankFiller = (c: number): boolean => c === 0x115f || c === 0x1160 || c === 0x3164 || c === 0xffa0 || c === 0x2800;

/** Splits a keyword into its words (blueprint text, a constant built-in pattern: linear, not trace input). */
const WORD_SEPARATORS = /[\s\x85]+/u;

/** BMP code unit → its NFKC form alone, where that differs; astral code points (planes 1 and 2) in a map. */
let compatBmp: (string | undefined)[] | undefined;
let compatAstral: Map<number, string> | undefined;

/**
 * Built on first use from the runtime's own Unicode data: every code point from U+0080 to plane 1's end and the
 * compatibility ideographs of plane 2, each followed by U+0000 (a starter that composes with nothing, so each is
 * normalised alone), in one normalize call over a string built here (never trace text). ~10 ms once.
 */
function compatTables(): { bmp: (string | undefined)[]; astral: Map<number, string> } {
  if (compatBmp && compatAstral) return { bmp: compatBmp, astral: compatAstral };
  const bmp: (string | undefined)[] = new Array(0x10000);
  const astral = new Map<number, string>();
  const cps: number[] = [];
  for (const [lo, hi] of [[0x80, 0xd7ff], [0xe000, 0x1ffff], [0x2f800, 0x2fa1f]] as const) for (let cp = lo; cp <= hi; cp++) cps.push(cp);
  const units = new Uint16Array(cps.length * 3);
  let u = 0;
  for (const cp of cps) {
    if (cp > 0xffff) {
      units[u++] = 0xd800 + ((cp - 0x10000) >> 10);
      units[u++] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
    } else units[u++] = cp;
    units[u++] = 0;
  }
  const n = utf16.decode(units.subarray(0, u)).normalize('NFKC');
  let p = 0;
  for (const cp of cps) {
    const q = n.indexOf('\0', p);
    const same = cp > 0xffff ? q - p === 2 && n.codePointAt(p) === cp : q - p === 1 && n.charCodeAt(p) === cp;
    if (!same) {
      if (cp > 0xffff) astral.set(cp, n.slice(p, q));
      else bmp[cp] = n.slice(p, q);
    }
    p = q + 1;
  }
  compatBmp = bmp;
  compatAstral = astral;
  return { bmp, astral };
}

/**
 * The text as the blocklist reads it besides as sent: each character in its NFKC form, invisible characters removed;
 * the input itself when that changes nothing, undefined when the folded text would be longer than `maxChars`.
 */
export function keywordText(s: string, maxChars = Number.POSITIVE_INFINITY): string | undefined {
  let i = 0;
  while (i < s.length && s.charCodeAt(i) < 128) i++;
  if (i === s.length) return s.length > maxChars ? undefined : s; // ASCII: nothing to fold, no invisible characters
  const { bmp, astral } = compatTables();
  // One pass into UTF-16 code units and one decode (as entity-chars' asciiDigits): slices per change took 60 ms on 1 MB.
  let out = new Uint16Array(Math.min(s.length + 64, maxChars + 1));
  for (let k = 0; k < i; k++) out[k] = s.charCodeAt(k);
  let o = i;
  let changed = false;
  const put = (c: number): boolean => {
    if (o === out.length) {
      if (o > maxChars) return false;
      const grown = new Uint16Array(Math.min(out.length * 2, maxChars + 1));
      grown.set(out);
      out = grown;
    }
    out[o++] = c;
    return true;
  };
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x115f && isBlankFiller(c)) {
      changed = true;
      if (!put(0x20)) return undefined;
      continue;
    }
    const drop = c < 128 ? 0 : invisibleAt(s, i);
    if (drop > 0) {
      changed = true;
      i += drop - 1;
      continue;
    }
    const cp = c >= 0xd800 && c <= 0xdbff ? s.codePointAt(i)! : c;
    const to = c < 128 ? undefined : cp > 0xffff ? astral.get(cp) : bmp[c];
    if (to === undefined) {
      if (!put(c)) return undefined;
      continue;
    }
    changed = true;
    for (let k = 0; k < to.length; k++) if (!put(to.charCodeAt(k))) return undefined;
    if (cp > 0xffff) i++;
  }
  if (o > maxChars) return undefined;
  return changed ? utf16.decode(out.subarray(0, o)) : s;
}
const utf16 = new TextDecoder('utf-16le');

/** The words of a keyword as the blocklist reads them; empty for one that is only whitespace or invisible characters. */
export function keywordWords(k: string): string[] {
  return (keywordText(k.normalize('NFKC')) ?? '').split(WORD_SEPARATORS).filter((w) => w !== '');
}

/** A word of a keyword as RE2: each accented letter composed or decomposed (the text is not recomposed: see above). */
function wordSource(w: string): string {
  let out = '';
  for (const ch of w) {
    const d = ch.normalize('NFD');
    out += d === ch ? RE2JS.quote(ch) : `(?:${RE2JS.quote(ch)}|${RE2JS.quote(d)})`;
  }
  return out;
}

const wordChar = (c: string | undefined) => c !== undefined && /\w/.test(c);

/**
 * A blocklist entry: case-insensitive, words joined by GAP, at word boundaries where the keyword itself starts/ends
 * with a word character ("secret projection" does not hit "secret project"). Undefined for an entry with no words
 * (a load error: gateFileChecks).
 */
export function keywordPattern(k: string): GatePattern | undefined {
  const words = keywordWords(k);
  if (words.length === 0) return undefined;
  const first = words[0]!;
  const last = words[words.length - 1]!;
  const src = `${wordChar(first[0]) ? '\\b' : ''}${words.map(wordSource).join(GAP)}${wordChar(last[last.length - 1]) ? '\\b' : ''}`;
  const re = RE2JS.compile(src, RE2JS.CASE_INSENSITIVE);
  return { id: k, source: src, message: `blocklisted keyword '${k}'`, test: (s) => re.test(s) };
}

/**
 * One RE2 alternation of a blocklist's entries, built once per list (a Tier1Scope's list lives as long as its
 * compiled blueprint): clean text — the usual case — is one linear pass per reading whatever the number of
 * keywords (measured on 1 MB: five keywords as one alternation cost what one keyword does). Null when RE2 refuses
 * the alternation (a very large list): the entries are then tried one by one.
 */
const anyOf = new WeakMap<readonly GatePattern[], RE2JS | null>();
function anyKeyword(blocklist: readonly GatePattern[]): RE2JS | null {
  let re = anyOf.get(blocklist);
  if (re === undefined) {
    try {
      re = RE2JS.compile(blocklist.map((k) => `(?:${k.source})`).join('|'), RE2JS.CASE_INSENSITIVE);
    } catch {
      re = null;
    }
    anyOf.set(blocklist, re);
  }
  return re;
}

/**
 * The blocklist entries `text` hits, as sent or as it reads (keywordText, folded once for all entries); undefined
 * when the folded text would exceed `maxChars` (the caller fails closed, as for any text it cannot scan).
 */
export function blocklistHits(text: string, blocklist: readonly GatePattern[], maxChars = Number.POSITIVE_INFINITY): GatePattern[] | undefined {
  if (blocklist.length === 0) return [];
  const folded = keywordText(text, maxChars);
  if (folded === undefined) return undefined;
  const any = anyKeyword(blocklist);
  if (any && !any.test(text) && (folded === text || !any.test(folded))) return [];
  return blocklist.filter((k) => k.test(text) || (folded !== text && k.test(folded)));
}
