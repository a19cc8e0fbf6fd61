/**
 * contains_entity(v, "ssn"): US Social Security numbers, `ddd-dd-dddd` or 9 digits after an SSN label, checked
 * against the SSA's area/group/serial rules. A hand-written scan over the digit runs (see hasSsn): linear.
 */
import { asciiDigits, foldsAt, groupSeparator, isAlnum, isDigit, isLetter } from './entity-chars.js';

const SSN_EXAMPLES = new Set(['078051120', '219099999', '123456789']);

/** The nine digits at `a` (area), `g` (group), `s` (serial) follow the SSA's rules and are no published sample. */
function ssnValid(text: string, a: number, g: number, s: number): boolean {
  // Char codes first: no strings for the many 9-digit numbers that fail here (order ids, routing numbers).
  const area = (text.charCodeAt(a) - 48) * 100 + (text.charCodeAt(a + 1) - 48) * 10 + text.charCodeAt(a + 2) - 48;
  if (area === 0 || area === 666 || area >= 900) return false;
  if (text.charCodeAt(g) === 48 && text.charCodeAt(g + 1) === 48) return false;
  if (text.charCodeAt(s) === 48 && text.charCodeAt(s + 1) === 48 && text.charCodeAt(s + 2) === 48 && text.charCodeAt(s + 3) === 48) return false;
  return !SSN_EXAMPLES.has(text.slice(a, a + 3) + text.slice(g, g + 2) + text.slice(s, s + 4));
}

function digitsAt(text: string, i: number, n: number): boolean {
  for (let k = i; k < i + n; k++) if (!isDigit(text.charCodeAt(k))) return false;
  return true;
}

/** isLetter that also takes NaN (past the end of the text): false. */
function isLetterCode(c: number): boolean {
  return c === c && isLetter(c);
}

/**
 * `ddd-dd-dddd` with one separator kind twice (groupSeparator: dash, space of any kind, dot), at the 3-digit run
 * starting at `i`, not inside a longer dash or dot chain.
 */
function separatedSsnAt(text: string, i: number): boolean {
  const sep = groupSeparator(text.charCodeAt(i + 3));
  if (sep === 0 || !digitsAt(text, i + 4, 2) || groupSeparator(text.charCodeAt(i + 6)) !== sep || !digitsAt(text, i + 7, 4)) return false;
  // By kind, as the separators: "ORD‑2024‑219‑09‑9998" with Unicode hyphens is a dash chain like its ASCII form.
  const prev = groupSeparator(text.charCodeAt(i - 1)); // 0 at the start (NaN)
  const next = text.charCodeAt(i + 11);
  const nextSep = groupSeparator(next);
  if (prev === 45 || (sep === 46 && prev === 46) || isDigit(next) || nextSep === 45 || (sep === 46 && nextSep === 46 && isDigit(text.charCodeAt(i + 12)))) return false;
  return ssnValid(text, i, i + 4, i + 7);
}

// How far before a bare 9-digit number its label may end ("social security number: " is 24 characters).
const SSN_LABEL_WINDOW = 32;

/**
 * A label right before a bare 9-digit number: `SSN`, `ssn_`, `social security` (a word, case-insensitive) ending
 * at most 32 characters before it, with no digit and no sentence end in between ("SSN: 219099998", "My SSN is
 * 219099998", "Social Security No. 219099998"; not "Do not share your SSN. Order 219099998 shipped"). An unlabelled
 * 9-digit number is an order, invoice or routing number far more often than an SSN.
 */
function ssnLabelBefore(text: string, i: number): boolean {
  const from = Math.max(0, i - SSN_LABEL_WINDOW - 'social security'.length);
  let w = text.slice(from, i);
  // Fullwidth or other compatibility letters ("ＳＳＮ") read as their ASCII forms; ASCII windows skip the fold.
  for (let k = 0; k < w.length; k++)
    if (w.charCodeAt(k) >= 128) {
      w = w.normalize('NFKC');
      break;
    }
  w = w.toLowerCase();
  for (const label of ['ssn', 'social security']) {
    for (let at = w.lastIndexOf(label); at >= 0; at = at > 0 ? w.lastIndexOf(label, at - 1) : -1) {
      const end = at + label.length;
      if (w.length - end > SSN_LABEL_WINDOW) break;
      if ((at > 0 && isAlnum(w.charCodeAt(at - 1))) || isLetterCode(w.charCodeAt(end))) continue;
      if (gapIsLabelFiller(w, end)) return true;
    }
  }
  return false;
}

// Words that may stand between a label and its number ("SSN is", "Social Security Number:", "SSN no.", "ssn_nr").
// "SSN/TIN", "SSN or ITIN": forms that take either.
const SSN_FILLER_WORDS = ['is', 'was', 'no', 'nr', 'number', 'of', 'or', 'tin', 'itin'];

// Signs a form puts between a label and its value: "Social Security Number (SSN): …", "SSN*: …", "[SSN] …".
const LABEL_GAP_SIGNS = '\t:#=()[]*/_"\'';

/**
 * Between a label and its number only what a form or a "my SSN is" sentence puts there: spaces (no line break),
 * LABEL_GAP_SIGNS, dashes, and the filler words above ("no." and "nr." with their dot). Any other word or sign
 * means the number is something else: "No SSN is needed for order 412345678", "your SSN in chat — reference …",
 * "SSN verification failed\nTicket: …", "SSN不要。注文…" are not SSNs. One exception for forms: a line break
 * right after `SSN:` ("SSN:\n219099998"), with no word before it.
 */
function gapIsLabelFiller(w: string, from: number): boolean {
  let colon = false;
  let word = false;
  for (let k = from; k < w.length; k++) {
    const c = w.charCodeAt(k);
    if (c === 10 || c === 13) {
      if (!colon || word) return false;
      continue;
    }
    if (c === 58) colon = true;
    if (LABEL_GAP_SIGNS.includes(w[k]!) || groupSeparator(c) === 32 || groupSeparator(c) === 45) continue; // a space or dash of any kind
    if (!isLetter(c)) return false; // digits, sentence ends, any other sign or script
    let e = k + 1;
    while (e < w.length && isLetter(w.charCodeAt(e))) e++;
    // Compared in place: no string per word (this runs for every valid 9-digit number a label precedes).
    if (!SSN_FILLER_WORDS.some((f) => f.length === e - k && w.startsWith(f, k))) return false;
    if (e - k === 2 && w.charCodeAt(k) === 110 && w.charCodeAt(e) === 46) e++; // "no." "nr."
    word = true;
    k = e - 1;
  }
  return true;
}

/**
 * SSNs: `ddd-dd-dddd` (dashes, spaces of any kind or dots), or 9 digits in a row after an SSN label; digits of any
 * script (Unicode Nd), format characters (Cf) read as absent. One pass over
 * the digit runs, each label check reading at most 47 characters before its number: linear.
 */
export function hasSsn(text: string): boolean {
  return ssnIn(text, true);
}

/** hasSsn's scan; `again`: read the text once more as asciiDigits if it found nothing and that would differ. */
function ssnIn(text: string, again: boolean): boolean {
  const n = text.length;
  let wide = false;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (!isDigit(c)) {
      if (c >= 128 && !wide && foldsAt(text, i)) wide = true;
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && isDigit(text.charCodeAt(j))) j++;
    if (j - i === 3 && separatedSsnAt(text, i)) return true;
    if (j - i === 9 && groupSeparator(text.charCodeAt(i - 1)) !== 45 && groupSeparator(text.charCodeAt(j)) !== 45 && ssnValid(text, i, i + 3, i + 5) && ssnLabelBefore(text, i)) return true;
    i = j;
  }
  // Digits of other scripts ("２１９-０９-９９９８", "SSN: ٢١٩٠٩٩٩٩٨") or format characters between them: once more over
  // the copy with ASCII digits and no format characters (asciiDigits).
  return again && wide && ssnIn(asciiDigits(text), false);
}
