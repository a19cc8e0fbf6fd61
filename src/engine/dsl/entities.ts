/**
 * contains_entity(): pattern + checksum detectors. Each candidate must also pass a validity check
 * (Luhn, SSN area/group/serial rules, IBAN mod-97, ABA checksum with a nearby keyword, entropy),
 * which keeps false positives low. The patterns are ours, not the author's, so they run on the
 * built-in engine; author regexes always go through RE2.
 *
 * Conditions in memory are never cut short (only async ones have a budget), so every detector is
 * linear in the text: fixed-width regexes, or hand-written scans where a regex would retry from
 * each start or rescan a run (emails, IPv6 runs, JWTs, generic tokens; cards and IBANs in
 * entity-numbers.ts, SSNs in entity-ssn.ts).
 */
import { isAlnum, isDigit, isLetter, isWordChar } from './entity-chars.js';
import { hasBankAccount, hasCreditCard } from './entity-numbers.js';
import { hasSsn } from './entity-ssn.js';
import { hasUrlPassword } from './entity-url-password.js';
import { parseIPv4, parseIPv6 } from './network.js';

export { abaValid, hasBankAccount, hasCreditCard, ibanValid, luhnValid } from './entity-numbers.js';
export { hasSsn } from './entity-ssn.js';

export const ENTITY_TYPES = ['credit_card', 'ssn', 'bank_account', 'email', 'phone', 'ip_address', 'secret'] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

export function isEntityType(s: string): s is EntityType {
  return (ENTITY_TYPES as readonly string[]).includes(s);
}

function isLocalChar(c: number): boolean {
  return isAlnum(c) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45; // . _ % + -
}

function isLabelChar(c: number): boolean {
  return isAlnum(c) || c === 45;
}

/**
 * `local@label.(label.)*tld`: a local-part character before the '@', then DNS labels (1–63
 * characters, letters/digits/hyphens, no hyphen at either end) each ending in '.', then a TLD of
 * 2–24 letters ending the word. Hand-written because the regex form retried up to 64 local-part
 * characters from every position (0.3–0.9 s on 1 MB). Here each '@' reads only the domain after
 * it, which stops at the next '@': linear.
 */
export function hasEmail(text: string): boolean {
  for (let at = text.indexOf('@'); at >= 0; ) {
    const stop = at > 0 && isLocalChar(text.charCodeAt(at - 1)) ? domainAfter(text, at + 1) : at + 1;
    if (stop < 0) return true;
    // The next '@' is often where the domain stopped ("a@b@c…"): no indexOf call for it.
    at = text.charCodeAt(stop) === 64 ? stop : text.indexOf('@', stop);
  }
  return false;
}

/** -1 when a domain with a TLD starts at `i`, else where reading stopped (> the '@'). */
function domainAfter(text: string, from: number): number {
  const n = text.length;
  let i = from;
  for (;;) {
    let j = i;
    while (j < n && isLabelChar(text.charCodeAt(j))) j++;
    if (j - i < 1 || j - i > 63 || text.charCodeAt(i) === 45 || text.charCodeAt(j - 1) === 45 || text.charCodeAt(j) !== 46) return j;
    let k = j + 1;
    while (k < n && isLetter(text.charCodeAt(k))) k++;
    if (k - j - 1 >= 2 && k - j - 1 <= 24 && !(k < n && isWordChar(text.charCodeAt(k)))) return -1;
    i = j + 1;
  }
}

// NANP (area and exchange start 2-9) with separators, or E.164 with a leading +.
const NANP_RE = /(?<![\d-])(?:\+?1[ .-]?)?(?:\(([2-9]\d{2})\) ?|([2-9]\d{2})[ .-])([2-9]\d{2})[ .-](\d{4})(?![\d-])/;
const E164_RE = /(?<![\w+])\+[1-9](?:[ .-]?\d){7,14}(?!\d)/;

export function hasPhone(text: string): boolean {
  return NANP_RE.test(text) || E164_RE.test(text);
}

// Not right after a `v`/`V` that starts a word ("v1.2.3.4", "(V10.0.0.1)" are versions); "ip=10.0.0.1",
// "ip=v10.0.0.1", "-v10.0.0.1" and "dev10.0.0.1" still count.
const IPV4_RE = /(?<![\d.])(?<!(?:^|[\s(["'])[vV])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])/g;

function isV6Char(c: number): boolean {
  return isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102) || c === 58 || c === 46; // hex : .
}

/**
 * IPv6 in RFC 4291 text form, read from a maximal run of hex digits, ':' and '.' that no word
 * touches: "std::vector", "Vec::new", "Foo::Bar" are code paths. A run glued to a word after a
 * single ':' ("IPv6:fe80::1", "addr:fe80::1") is read from after that colon. Besides parsing, an
 * address needs a decimal digit, and the "::" form two explicit groups one of which has 3+ hex
 * digits: that keeps "dead::beef", "a::b", Python slices ("a[1::2]", "a[::2]") and the loopback
 * "::1" out (it names no host outside the machine; 127.0.0.1 is a dotted quad and still counts).
 */
function ipv6InRun(text: string, s: number, e: number): boolean {
  if (e < text.length && isWordChar(text.charCodeAt(e))) return false;
  let a = s;
  let b = e;
  while (b > a && text.charCodeAt(b - 1) === 46) b--; // sentence end: "… fe80::1."
  if (b - a >= 2 && text.charCodeAt(b - 1) === 58 && text.charCodeAt(b - 2) !== 58) b--; // "fe80::1: up"
  if (a > 0 && isWordChar(text.charCodeAt(a - 1))) {
    a = text.indexOf(':', a) + 1;
    if (text.charCodeAt(a) === 58) return false; // "Foo::Bar", "std::vector"
  } else if (text.charCodeAt(a) === 58 && text.charCodeAt(a + 1) !== 58) a++;
  if (b - a < 2 || b - a > 45) return false;
  const addr = text.slice(a, b);
  if (!/\d/.test(addr) || !parseIPv6(addr)) return false;
  if (!addr.includes('::')) return true;
  const groups = addr.split(':').filter((g) => g !== '');
  return groups.length >= 2 && groups.some((g) => g.includes('.') || g.length >= 3);
}

function hasIPv6(text: string): boolean {
  const n = text.length;
  for (let c = text.indexOf(':'); c >= 0; ) {
    // Runs are disjoint: the next search starts after this one.
    let s = c;
    while (s > 0 && isV6Char(text.charCodeAt(s - 1))) s--;
    let e = c + 1;
    while (e < n && isV6Char(text.charCodeAt(e))) e++;
    if (ipv6InRun(text, s, e)) return true;
    c = text.indexOf(':', e);
  }
  return false;
}

export function hasIpAddress(text: string): boolean {
  for (const m of text.matchAll(IPV4_RE)) if (parseIPv4(m[0])) return true;
  return hasIPv6(text);
}

// ── secrets: vendor token shapes, private key blocks, and a generic rule for random keys.

const VENDOR_RES = [
  /\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA)[0-9A-Z]{16}\b/, // AWS access key id
  /\bgh[pousr]_[A-Za-z0-9]{36,255}\b/, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/,
  // PEM / OpenSSH / PGP private keys. Real labels have at most two words ("RSA", "ENCRYPTED",
  // "OPENSSH"); the bound keeps a long run of words after BEGIN from being walked word by word.
  /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/, // Slack
  /\b[sr]k_live_[A-Za-z0-9]{20,}\b/, // Stripe
  /\bAIza[0-9A-Za-z_-]{35}\b/, // Google API key
];

/** The base64url alphabet: JWT segments. */
function isB64Url(c: number): boolean {
  return isAlnum(c) || c === 45 || c === 95;
}

function runEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length && isB64Url(text.charCodeAt(i))) i++;
  return i;
}

/**
 * `eyJ<10+>.eyJ<10+>.<10+>` (header and payload are base64 of JSON objects). As a regex, every
 * "eyJ" after a dash rescanned the rest of its run ("eyJ-eyJ-…": quadratic). Here a failed start
 * skips its whole run: later starts in it end at the same place with a shorter first segment.
 */
function hasJwt(text: string): boolean {
  let from = 0;
  for (;;) {
    const i = text.indexOf('eyJ', from);
    if (i < 0) return false;
    if (i > 0 && isWordChar(text.charCodeAt(i - 1))) {
      from = i + 1;
      continue;
    }
    const e1 = runEnd(text, i + 3);
    if (e1 - i >= 13 && text.charCodeAt(e1) === 46 && text.startsWith('eyJ', e1 + 1)) {
      const e2 = runEnd(text, e1 + 4);
      if (e2 - e1 >= 14 && text.charCodeAt(e2) === 46 && runEnd(text, e2 + 1) - e2 > 10) return true;
    }
    from = Math.max(e1, i + 1);
  }
}

// Token characters: base64, standard and url-safe. '=' only as trailing padding, so `api_key=VALUE`
// yields VALUE on its own instead of one token with the name glued on.
const TOKEN_CHAR = new Uint8Array(128);
for (let c = 0; c < 128; c++) TOKEN_CHAR[c] = isB64Url(c) || c === 43 || c === 47 ? 1 : 0;
const HEX_KEY_RE = /^(?:[0-9a-fA-F]{32,64}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/;
// A credential name right before the value: `api_key=`, `"client_secret": "`, `X-Api-Key: `, `Bearer `.
const CREDENTIAL_NAME_RE = /(?:(?:key|secret|token|passw(?:or)?d|pwd|auth|credentials?)["']?\s{0,3}(?:[:=]|=>)\s{0,3}["']?|bearer\s{1,3})$/i;
// Scratch table of asciiEntropy; detectors are synchronous, so one table serves every call.
const counts = new Int32Array(128);

/** Shannon entropy in bits per character. */
export function shannonEntropy(s: string): number {
  const freq = new Map<string, number>();
  for (const ch of s) freq.set(ch, (freq.get(ch) ?? 0) + 1);
  let h = 0;
  for (const c of freq.values()) {
    const p = c / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** Entropy of an ASCII token through a reused count table (the hot path; no Map per token). */
function asciiEntropy(t: string): number {
  counts.fill(0);
  for (let i = 0; i < t.length; i++) counts[t.charCodeAt(i) & 127]++;
  let h = 0;
  for (let c = 0; c < 128; c++) {
    const n = counts[c];
    if (n > 0) h -= (n / t.length) * Math.log2(n / t.length);
  }
  return h;
}

/**
 * Share of the token inside words: `[A-Z]?[a-z]{3,}` runs (CamelCase parts). Identifiers are
 * mostly words ("S3BucketPolicyForProductionEnv2024" 0.65; p5 0.61 over 3 000 generated CamelCase
 * names), random base62 mostly not (median 0.15, p99 0.54 over 3 000 keys of 24–40 characters).
 */
function wordShare(t: string): number {
  let inWords = 0;
  let i = 0;
  while (i < t.length) {
    const c = t.charCodeAt(i);
    if (c < 97 || c > 122) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < t.length && t.charCodeAt(j) >= 97 && t.charCodeAt(j) <= 122) j++;
    if (j - i >= 3) {
      const cap = i > 0 && t.charCodeAt(i - 1) >= 65 && t.charCodeAt(i - 1) <= 90;
      inWords += j - i + (cap ? 1 : 0);
    }
    i = j;
  }
  return inWords / t.length;
}

function b64Value(c: number): number {
  if (c >= 65 && c <= 90) return c - 65;
  if (c >= 97 && c <= 122) return c - 71;
  if (c >= 48 && c <= 57) return c + 4;
  if (c === 43 || c === 45) return 62;
  if (c === 47 || c === 95) return 63;
  return -1;
}

/**
 * Base64 of prose ("aGVsbG8gd29ybGQg…"): decodes to printable ASCII with a space. A random key
 * decodes to random bytes (24 bytes all printable: ~1e-10); encoded credentials ("user:pass",
 * a password) have no space and stay candidates.
 */
function isBase64Text(t: string): boolean {
  let end = t.length;
  while (end > 0 && t.charCodeAt(end - 1) === 61) end--;
  let bits = 0;
  let acc = 0;
  let space = false;
  for (let i = 0; i < end; i++) {
    const v = b64Value(t.charCodeAt(i));
    if (v < 0) return false;
    acc = ((acc << 6) | v) & 0xffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      const byte = (acc >> bits) & 0xff;
      if (byte === 32) space = true;
      else if ((byte < 32 || byte > 126) && byte !== 9 && byte !== 10 && byte !== 13) return false;
    }
  }
  return space;
}

/**
 * Generic random key: 24–512 characters with upper case, lower case and at least two digits,
 * entropy above 4.2 bits/char, less than half of it in words, and not base64 of text. A random
 * base62 key of 32–40 characters passes ~96% of the time; identifiers fail on words or entropy.
 */
function isRandomKey(t: string): boolean {
  if (t.includes('/') && /^[\w-]+(?:\/[\w-]+){2,}/.test(t) && !/[+=]/.test(t)) return false; // paths
  let upper = false;
  let lower = false;
  let digits = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c >= 65 && c <= 90) upper = true;
    else if (c >= 97 && c <= 122) lower = true;
    else if (c >= 48 && c <= 57) digits++;
  }
  if (!upper || !lower || digits < 2) return false;
  return asciiEntropy(t) > 4.2 && wordShare(t) < 0.5 && !isBase64Text(t);
}

/**
 * Hex material (hashes, UUIDs) is a key only when assigned to a credential name: a 40-hex value
 * after `commit` or `sha256:` is a git or checksum id, the same value after `api_key=` is a key.
 */
function isNamedHexKey(text: string, t: string, at: number): boolean {
  if (!HEX_KEY_RE.test(t)) return false;
  // Cheap gate before the name regex: an assignment ends in ':', '=' or '=>' (then spaces/quotes)
  // or in "bearer ". A hash in a listing (preceded by a space and a word) stops here.
  let k = at - 1;
  while (k >= 0 && at - k <= 4 && /[\s"']/.test(text[k]!)) k--;
  const c = text[k];
  if (c !== ':' && c !== '=' && c !== '>' && (c === undefined || c.toLowerCase() !== 'r')) return false;
  return CREDENTIAL_NAME_RE.test(text.slice(Math.max(0, at - 40), at)) && asciiEntropy(t) > 3;
}

export function hasSecret(text: string): boolean {
  for (const re of VENDOR_RES) if (re.test(text)) return true;
  if (hasUrlPassword(text)) return true;
  if (hasJwt(text)) return true;
  // Maximal runs of token characters, by hand: a `{24,}` regex retried from every position of
  // every shorter run (18 ms on 1 MB of prose).
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c >= 128 || TOKEN_CHAR[c] === 0) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && text.charCodeAt(j) < 128 && TOKEN_CHAR[text.charCodeAt(j)] === 1) j++;
    const body = j;
    while (j < n && text.charCodeAt(j) === 61) j++; // '=' padding
    // 24–512 characters: shorter ones are too short to be random keys, longer ones are blobs
    // (data URIs, embedded files).
    if (body - i >= 24 && j - i <= 512) {
      const t = text.slice(i, j);
      if (isRandomKey(t) || isNamedHexKey(text, t, i)) return true;
    }
    i = j;
  }
  return false;
}

export const ENTITY_DETECTORS: Record<EntityType, (text: string) => boolean> = {
  credit_card: hasCreditCard,
  ssn: hasSsn,
  bank_account: hasBankAccount,
  email: hasEmail,
  phone: hasPhone,
  ip_address: hasIpAddress,
  secret: hasSecret,
};
