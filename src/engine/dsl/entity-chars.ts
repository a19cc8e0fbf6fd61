/**
 * How the entity detectors read characters: classes on char codes (ASCII digits, letters, word characters), group
 * separators by kind, and the second reading's Unicode tables (digits of any script, invisible format characters).
 * Shared by the number detectors (entity-numbers.ts), the SSN detector (entity-ssn.ts) and entities.ts.
 */

export function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

export function isAlnum(c: number): boolean {
  return isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** `\w` of a non-unicode regex: where `\b` sees a word continue. */
export function isWordChar(c: number): boolean {
  return isAlnum(c) || c === 95;
}

export function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/**
 * A separator between the digit groups of a printed number (cards, SSNs), normalised: 32 for a space of any
 * kind a text may carry (no-break, figure, thin, narrow no-break, ideographic…), 45 for a dash (ASCII, Unicode
 * hyphens, en dash, minus sign), 46 for a dot; 0 for anything else. A card written with no-break spaces or dots
 * is still a card: separators are read by kind, so the checks run on the digits alone.
 */
export function groupSeparator(c: number): number {
  if (c === 32 || c === 45 || c === 46) return c;
  if (c === 0xff0e) return 46; // fullwidth full stop
  if (c === 0xa0 || (c >= 0x2000 && c <= 0x200a) || c === 0x202f || c === 0x205f || c === 0x3000) return 32;
  if ((c >= 0x2010 && c <= 0x2013) || c === 0x2212 || c === 0xfe63 || c === 0xff0d) return 45;
  return 0;
}

// Per BMP code unit, what the second reading does with it: 0 keep; 1–10 a decimal digit of any script (Unicode Nd:
// Arabic-Indic, Devanagari, fullwidth…) read as the ASCII digit value + 1 - 1; FORMAT an invisible character,
// dropped: a format character (Unicode Cf: zero-width space, soft hyphen, word joiner, BOM, bidi marks) or another
// default-ignorable one (variation selectors, combining grapheme joiner, Mongolian FVS, Khmer inherent vowels,
// Hangul fillers: they show as nothing, or as a blank, but are no space); HIGH a high surrogate that starts an
// astral digit or format character (mathematical bold digits "𝟒", tag characters, variation selectors 17–256).
const FORMAT = 11;
const HIGH = 12;
let bmpFold: Uint8Array | undefined;
// The same for the astral planes that have digits or format characters: plane 1 (U+10000–1FFFF) and the start of
// plane 14 (U+E0000–E0FFF: tags, variation selectors 17–256), indexed from U+10000 and U+E0000.
const plane1Fold = new Uint8Array(0x10000);
const plane14Fold = new Uint8Array(0x1000);

/** An astral code point's fold code (0 keep, 1–10 digit, FORMAT) from its surrogate pair; 0 for a lone surrogate. */
function astralFoldAt(hi: number, lo: number): number {
  if (!(lo >= 0xdc00 && lo <= 0xdfff)) return 0;
  const k = ((hi - 0xd800) << 10) + lo - 0xdc00; // code point - 0x10000
  if (k < 0x10000) return plane1Fold[k]!;
  return k >= 0xd0000 && k < 0xd1000 ? plane14Fold[k - 0xd0000]! : 0;
}

/**
 * The tables, from the runtime's own Unicode data (the regex property classes), built on first use: one match over a
 * string of every non-ASCII BMP code point, one over planes 1 and 14 (the only astral planes with Nd, Cf or other
 * default-ignorable characters), ~5–10 ms once. Nd digits come in runs of ten from 0 (the Unicode stability policy), so a digit's value is its offset
 * in its run of consecutive digits, mod 10 (the five mathematical digit sets are one run of 50).
 */
function foldTable(): Uint8Array {
  if (bmpFold) return bmpFold;
  const t = new Uint8Array(0x10000);
  const units = new Uint16Array(0x10000 - 128);
  for (let c = 128; c < 0x10000; c++) units[c - 128] = c >= 0xd800 && c <= 0xdfff ? 32 : c;
  // Built-in regexes over constant patterns, run once on strings built here (never trace text): no RE2 needed.
  const re = /\p{Nd}+|[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
  for (const m of utf16.decode(units).matchAll(re)) {
    const at = m.index + 128;
    if (!/\p{Nd}/u.test(m[0])) t[at] = FORMAT;
    else for (let k = 0; k < m[0].length; k++) t[at + k] = (k % 10) + 1;
  }
  const pairs = new Uint16Array(2 * 0x11000);
  const base = (k: number): number => (k < 0x10000 ? 0x10000 + k : 0xe0000 + k - 0x10000);
  for (let k = 0; k < 0x11000; k++) {
    const c = base(k) - 0x10000;
    pairs[2 * k] = 0xd800 + (c >> 10);
    pairs[2 * k + 1] = 0xdc00 + (c & 0x3ff);
  }
  for (const m of utf16.decode(pairs).matchAll(re)) {
    const cp = base(m.index / 2);
    const cf = !/\p{Nd}/u.test(m[0]);
    for (let k = 0; k < m[0].length / 2; k++) {
      if (cp + k < 0x20000) plane1Fold[cp + k - 0x10000] = cf ? FORMAT : (k % 10) + 1;
      else plane14Fold[cp + k - 0xe0000] = cf ? FORMAT : (k % 10) + 1;
      t[0xd800 + ((cp + k - 0x10000) >> 10)] = HIGH;
    }
  }
  bmpFold = t;
  return t;
}

/**
 * The non-ASCII code unit at `i` starts something the second reading changes: a digit of another script, a format
 * character, or an astral one (not any emoji: their high surrogates are shared). The scans ask as they skip
 * non-digits, so ASCII text never builds the tables.
 */
export function foldsAt(text: string, i: number): boolean {
  const f = foldTable()[text.charCodeAt(i)]!;
  return f === HIGH ? astralFoldAt(text.charCodeAt(i), text.charCodeAt(i + 1)) !== 0 : f !== 0;
}

/**
 * The text as it reads: every Unicode decimal digit (Nd) as its ASCII digit, invisible characters (format characters,
 * Cf, and the other default-ignorable ones: variation selectors, Hangul fillers…) removed.
 * The number detectors read ASCII digits and visible separators; one that met such a character and found nothing
 * reads this copy once more, so "٤١١١…", "𝟒𝟏𝟏𝟏…", "4111\u200b1111…", "4111\ufe0f1111…" (a zero-width space,
 * soft hyphen or variation selector shows as nothing: "4111111111111111") are still found and ordinary text pays
 * one comparison per character.
 */
export function asciiDigits(text: string): string {
  // One pass into UTF-16 code units and one decode: a piece per digit took 60 ms on 1 MB of fullwidth digits.
  // A lone surrogate decodes as U+FFFD (no digit).
  const t = foldTable();
  const out = new Uint16Array(text.length);
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const f = c < 128 ? 0 : t[c]!;
    if (f === 0) out[o++] = c;
    else if (f <= 10) out[o++] = 47 + f;
    else if (f === HIGH) {
      const g = astralFoldAt(c, text.charCodeAt(i + 1));
      if (g === 0) out[o++] = c;
      else {
        if (g <= 10) out[o++] = 47 + g;
        i++;
      }
    }
  }
  return utf16.decode(out.subarray(0, o));
}
const utf16 = new TextDecoder('utf-16le');

/**
 * How many code units of an invisible character start at `i` (the FORMAT ones above: Cf and the other
 * default-ignorable code points, astral ones included): 0 when the character there shows, 1 or 2 to drop. The
 * keyword blocklist reads text without them (gate/keywords.ts): "Night\u200bingale" shows as "Nightingale".
 * ASCII never builds the tables.
 */
export function invisibleAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 128) return 0;
  const f = foldTable()[c]!;
  if (f === FORMAT) return 1;
  return f === HIGH && astralFoldAt(c, text.charCodeAt(i + 1)) === FORMAT ? 2 : 0;
}
