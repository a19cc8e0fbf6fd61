/**
 * contains_entity(v, "credit_card" | "bank_account"): checksummed numbers. Candidates are cut
 * where the number's own format says it ends (whole digit groups for cards, the registry length
 * for IBANs, exactly 9 digits for ABA) and checked in one linear pass: hand-written scans, since a
 * regex grabbed too much (a CVV or the next word) and never retried a shorter candidate.
 */
import { asciiDigits, foldsAt, groupSeparator, isAlnum, isDigit, isLetter, isWordChar } from './entity-chars.js';

/**
 * Card groups may also be joined by `_` or `/` ("4111_1111_1111_1111", "4111/1111/1111/1111"), each its own kind:
 * read as written, it is the card. Dates (2024/01/15) and paths keep 1–2 digit groups or too few digits, and the
 * issuer and Luhn checks apply as to any chain. Cards only: an SSN with slashes reads as a date or a fraction.
 */
function cardSeparator(c: number): number {
  return c === 95 || c === 47 ? c : groupSeparator(c);
}

/**
 * A `_` or `/` chain counts only when it stands alone (checked once the chain has ended): four random 4-digit groups
 * pass issuer and Luhn ~2.6 % of the time, and such chains are mostly path segments ("/api/shards/1234/5678/…",
 * "data/…/x.json") and numeric literals ("0x4111_1111_1111_1111", "4111_1111_1111_1111n"). Not alone: preceded by a
 * letter (so "0x"/"0X" too), a digit, `/`, `_` or `.`; followed by `/`, a letter, or `_` and a digit. `from` is the
 * chain's first digit, `to` just after its last.
 */
function standsAlone(text: string, from: number, to: number): boolean {
  const b = from > 0 ? text.charCodeAt(from - 1) : 32;
  if (isAlnum(b) || b === 47 || b === 95 || b === 46) return false;
  const a = to < text.length ? text.charCodeAt(to) : 32;
  return !(a === 47 || isLetter(a) || (a === 95 && isDigit(text.charCodeAt(to + 1))));
}

/** A chain of this separator is judged at its end, standing alone (standsAlone). */
function judgedAtEnd(sep: number): boolean {
  return sep === 95 || sep === 47;
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (dbl) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

/**
 * Issuer prefixes of the major networks (from the first four digits); a Luhn-valid number outside
 * them is most likely an id.
 */
function knownIssuer(p4: number, len: number): boolean {
  const p2 = Math.floor(p4 / 100);
  const p3 = Math.floor(p4 / 10);
  if (p4 >= 4000 && p4 <= 4999) return len === 13 || len === 16 || len === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return len === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return len === 15; // Amex
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return len >= 16; // Discover
  if (p2 === 36 || p2 === 38 || (p3 >= 300 && p3 <= 305)) return len >= 14; // Diners
  if (p4 >= 3528 && p4 <= 3589) return len >= 16; // JCB
  if (p2 === 62) return len >= 16; // UnionPay
  return false;
}

/**
 * The issuers' lengths by first digit (Visa 13/16/19, Mastercard 16, Amex/Diners/JCB 14+,
 * Discover/UnionPay 16+): rules out most windows of a digit chain before any Luhn work.
 */
function leadAndLengthOk(lead: number, len: number): boolean {
  if (lead === 52) return len === 13 || len === 16 || len === 19; // '4'
  if (lead === 53 || lead === 50) return len === 16; // '5', '2'
  if (lead === 51) return len >= 14; // '3'
  return lead === 54 && len >= 16; // '6'
}

// A ring of the last digit groups: start, end and Luhn sums. 6 groups of 3 digits already make 18,
// so a card spans at most MAX_GROUPS.
const MAX_GROUPS = 6;
const RING = 8; // a power of two > MAX_GROUPS
// Module scratch, not per call: detectors are synchronous, and someText() calls them once per
// string leaf (up to 10 000 per value).
const starts = new Int32Array(RING);
const ends = new Int32Array(RING);
const evens = new Int32Array(RING);
const odds = new Int32Array(RING);

/**
 * Luhn sums of a group's digits when its last digit is not doubled (`evens`) and when it is
 * (`odds`): a candidate adds each group's sum by the parity of the digit count to its right, so
 * extending a candidate by one group costs O(1).
 */
function setLuhnSums(text: string, slot: number): void {
  let even = 0;
  let odd = 0;
  for (let p = ends[slot]! - 1, k = 0; p >= starts[slot]!; p--, k++) {
    const d = text.charCodeAt(p) - 48;
    const d2 = d > 4 ? d * 2 - 9 : d * 2;
    even += k % 2 === 0 ? d : d2;
    odd += k % 2 === 0 ? d2 : d;
  }
  evens[slot] = even;
  odds[slot] = odd;
}

/** The rest of a Luhn-valid candidate's checks: not one repeated digit, issuer prefix and length. */
function issuerOk(text: string, first: number, m: number, len: number): boolean {
  const lead = text.charCodeAt(starts[first]!);
  let p4 = 0;
  let got = 0;
  let same = true;
  for (let g = 0; g < m; g++) {
    const slot = (first + g) & (RING - 1);
    for (let p = starts[slot]!; p < ends[slot]!; p++) {
      const c = text.charCodeAt(p);
      if (c !== lead) same = false;
      if (got < 4) {
        p4 = p4 * 10 + c - 48;
        got++;
      }
    }
  }
  return !same && knownIssuer(p4, len);
}

/** A card among the windows of m = minM..maxM groups ending at ring slot `last` (Luhn sums O(1) per m). */
function cardEndingAt(text: string, last: number, minM: number, maxM: number): boolean {
  let digits = 0;
  let sum = 0;
  for (let m = 1; m <= maxM; m++) {
    const slot = (last - m + 1) & (RING - 1);
    sum += digits % 2 === 0 ? evens[slot]! : odds[slot]!;
    digits += ends[slot]! - starts[slot]!;
    if (digits > 19) return false;
    if (m >= minM && digits >= 13 && leadAndLengthOk(text.charCodeAt(starts[slot]!), digits) && sum % 10 === 0 && issuerOk(text, slot, m, digits)) return true;
  }
  return false;
}

/**
 * Candidates are whole digit groups, never slices: a run of 13–19 digits, or adjacent groups of
 * 3–6 digits (how cards are printed: 4-4-4-4, 4-6-5, 4-4-4-4-3) in a chain joined by one kind of
 * single separator (space, dash or dot), 13–19 digits in all, that begins or ends the chain: the card
 * plus a CVV, expiry or PIN after it, or a reference before it. Separators are read by kind (groupSeparator):
 * a no-break or thin space is a space, a Unicode hyphen a dash, and a dot joins groups too: a decimal number has
 * one dot, so its two groups hold at most 12 digits (fewer than any card), and digits after a dot that no group
 * precedes ("0.4111…") are a fraction, as before. A 20+ digit id, a number glued to
 * more digits, the fraction of a decimal number, and windows in the middle of a long chain of
 * number groups (a table of 4-digit values) are not searched for a Luhn-valid slice: any long
 * number has one. Each group adds O(MAX_GROUPS) work: linear.
 */
export function hasCreditCard(text: string): boolean {
  return cardIn(text, true);
}

/** hasCreditCard's scan; `again`: read the text once more as asciiDigits if it found nothing and that would differ. */
function cardIn(text: string, again: boolean): boolean {
  const n = text.length;
  let head = 0; // ring slot of the last group
  let count = 0; // groups of the current chain in the ring (up to MAX_GROUPS)
  let chainLen = 0; // groups of the current chain
  let chainSep = 0;
  let chainFrom = 0; // where the current chain's first group starts
  let found = false; // a `_` or `/` chain had a card window: it counts if the chain stands alone
  let wide = false;
  let i = 0;
  while (i < n) {
    const c0 = text.charCodeAt(i);
    if (!isDigit(c0)) {
      if (c0 >= 128 && !wide && foldsAt(text, i)) wide = true;
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && isDigit(text.charCodeAt(j))) j++;
    const len = j - i;
    // The separator between this run and the previous one, by kind (space of any kind, dash, dot), 0 if none.
    const sep = i >= 2 && isDigit(text.charCodeAt(i - 2)) ? cardSeparator(text.charCodeAt(i - 1)) : 0;
    const groupLen = len >= 3 && len <= 6;
    // "0.4111…", "12.5": digits after a decimal point — unless a dot joins two groups ("4111.1111.…").
    const fraction = sep === 46 && !(groupLen && count > 0);
    const grouped = !fraction && groupLen;
    const joined = grouped && sep !== 0 && count > 0;
    if (!joined || (chainLen > 1 && sep !== chainSep)) {
      // The chain ends: windows ending with its last group.
      if (count >= 2 && chainEnds(text, head, count, chainSep, chainFrom, found)) return true;
      // A new separator starts a new chain at the previous group ("1234-5678 4111 1111 …").
      count = chainLen = joined ? 1 : 0;
      chainFrom = joined ? starts[head]! : i;
      found = false;
    }
    if (grouped || (!fraction && len >= 13 && len <= 19)) {
      head = (head + 1) & (RING - 1);
      starts[head] = i;
      ends[head] = j;
      setLuhnSums(text, head);
    }
    if (grouped) {
      if (count < MAX_GROUPS) count++;
      if (++chainLen === 2) chainSep = sep;
      // The window from the chain's first group to this one.
      if (chainLen >= 2 && chainLen <= MAX_GROUPS && !found && cardEndingAt(text, head, chainLen, chainLen)) {
        if (!judgedAtEnd(chainSep)) return true;
        found = true;
      }
    } else if (!fraction && len >= 13 && len <= 19 && cardEndingAt(text, head, 1, 1)) return true;
    i = j;
  }
  if (count >= 2 && chainEnds(text, head, count, chainSep, chainFrom, found)) return true;
  return again && wide && cardIn(asciiDigits(text), false);
}

/**
 * At a chain's end: a card among the windows ending with its last group (ring slot `head`, `count` groups in the
 * ring), or — for a `_` or `/` chain — one found earlier in the chain (`found`), if the chain stands alone.
 */
function chainEnds(text: string, head: number, count: number, sep: number, from: number, found: boolean): boolean {
  if (!judgedAtEnd(sep)) return cardEndingAt(text, head, 2, count);
  return (found || cardEndingAt(text, head, 2, count)) && standsAlone(text, from, ends[head]!);
}

/**
 * IBAN length per country: the SWIFT IBAN registry (ISO 13616), all 89 countries. A code outside
 * it is not an IBAN, whatever its checksum: guessing a length for it would search every cut.
 */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21,
  CR: 22, CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18,
  FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23,
  IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27,
  MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18, NO: 15, OM: 23, PK: 24, PL: 28,
  PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27,
  SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
};

// The same lengths indexed by (first letter - 'A') * 26 + (second letter - 'A'); 0 = not an IBAN country.
const IBAN_LENGTH_BY_CODE = new Uint8Array(26 * 26);
for (const [cc, len] of Object.entries(IBAN_LENGTHS)) IBAN_LENGTH_BY_CODE[(cc.charCodeAt(0) - 65) * 26 + cc.charCodeAt(1) - 65] = len;

/**
 * ISO 7064 mod 97-10 over upper-case IBAN character codes (country and check digits moved last).
 * The remainder is reduced every 6 characters (< 97·10^12 + 10^12: exact in a double).
 */
function ibanChecksumOk(codes: Uint8Array, len: number): boolean {
  let rem = 0;
  for (let k = 4; k < len + 4; k++) {
    const c = codes[k < len ? k : k - len]!;
    rem = c >= 65 ? rem * 100 + c - 55 : rem * 10 + c - 48;
    if (k % 6 === 3) rem %= 97;
  }
  return rem % 97 === 1;
}

export function ibanValid(raw: string): boolean {
  const s = raw.replace(/ /g, '').toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(s) || IBAN_LENGTHS[s.slice(0, 2)] !== s.length) return false;
  return ibanChecksumOk(Uint8Array.from(s, (ch) => ch.charCodeAt(0)), s.length);
}

// Upper-case code of an ASCII letter or digit, 0 for anything else.
const ALNUM_UPPER = new Uint8Array(128);
for (let c = 48; c < 123; c++) if (isAlnum(c)) ALNUM_UPPER[c] = c >= 97 ? c - 32 : c;
const codes = new Uint8Array(34); // hasIban's scratch (synchronous, like the card ring)

/**
 * IBAN candidates: two letters and two digits at a word start, then exactly as many characters as
 * the country's IBAN has, optionally printed in groups of four; the character after the last one
 * must end the word. Cutting at the registry length is what lets "ES91 2100 … 1332 please" match:
 * a free-length pattern took "plea" as one more group and the checksum failed. Each start reads at
 * most 34 characters and 8 spaces: linear.
 */
// Where an IBAN may start; the regex engine skips the rest of the text faster than a char loop.
const IBAN_START_RE = /\b[A-Za-z]{2}\d{2}/g;

function hasIban(text: string): boolean {
  const n = text.length;
  IBAN_START_RE.lastIndex = 0;
  while (IBAN_START_RE.test(text)) {
    const i = IBAN_START_RE.lastIndex - 4;
    const len = IBAN_LENGTH_BY_CODE[((text.charCodeAt(i) & ~32) - 65) * 26 + (text.charCodeAt(i + 1) & ~32) - 65]!;
    if (len === 0) continue;
    // Shape first, reading only: groups of four characters, each optionally after one space.
    let p = i + 4;
    let left = len - 4;
    while (left > 0) {
      if (text.charCodeAt(p) === 32) p++;
      const group = left < 4 ? left : 4;
      let k = 0;
      while (k < group) {
        const c = text.charCodeAt(p + k);
        if (!(c < 128 && ALNUM_UPPER[c] !== 0)) break; // NaN past the end fails too
        k++;
      }
      if (k < group) break;
      p += group;
      left -= group;
    }
    if (left > 0 || (p < n && isWordChar(text.charCodeAt(p)))) continue;
    let got = 0;
    for (let q = i; got < len; q++) if (text.charCodeAt(q) !== 32) codes[got++] = ALNUM_UPPER[text.charCodeAt(q)]!;
    if (ibanChecksumOk(codes, len)) return true;
  }
  return false;
}

export function abaValid(d: string): boolean {
  if (!/^\d{9}$/.test(d)) return false;
  const p = Number(d.slice(0, 2));
  if (!((p >= 0 && p <= 12) || (p >= 21 && p <= 32) || (p >= 61 && p <= 72) || p === 80)) return false;
  const n = (i: number): number => d.charCodeAt(i) - 48;
  const sum = 3 * (n(0) + n(3) + n(6)) + 7 * (n(1) + n(4) + n(7)) + (n(2) + n(5) + n(8));
  return sum % 10 === 0 && !/^0+$/.test(d);
}

// A bare 9-digit number passes the ABA checksum ~4% of the time; require banking context nearby.
const ABA_CONTEXT = /\b(?:routing|aba|rtn|transit|bank|account|acct|wire|ach)\b/gi;
const ABA_WINDOW = 40;

/**
 * ABA routing numbers: a run of exactly 9 digits with a banking keyword wholly within 40
 * characters. Keyword positions are found once, so many numbers far from one keyword stay linear.
 */
function hasAba(text: string): boolean {
  const kw: number[] = []; // start, end pairs in text order
  ABA_CONTEXT.lastIndex = 0;
  for (let m = ABA_CONTEXT.exec(text); m !== null; m = ABA_CONTEXT.exec(text)) kw.push(m.index, m.index + m[0].length);
  if (kw.length === 0) return false;
  let k = 0;
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (!isDigit(text.charCodeAt(i))) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && isDigit(text.charCodeAt(j))) j++;
    if (j - i === 9 && abaValid(text.slice(i, j))) {
      // Keywords starting before the window cannot serve this number or a later one.
      while (k < kw.length && kw[k]! < i - ABA_WINDOW) k += 2;
      if (k < kw.length && kw[k + 1]! <= j + ABA_WINDOW) return true;
    }
    i = j;
  }
  return false;
}

export function hasBankAccount(text: string): boolean {
  return hasIban(text) || hasAba(text);
}
