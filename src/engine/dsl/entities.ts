/**
 * contains_entity(): pattern + checksum detectors. Each candidate found by a fixed, linear-time
 * pattern must also pass a validity check (Luhn, SSN area/group/serial rules, IBAN mod-97, ABA
 * checksum with a nearby keyword, entropy), which keeps false positives low. The patterns are ours,
 * not the author's, so they run on the built-in engine; author regexes always go through RE2.
 */
import { parseIPv4, parseIPv6 } from './network.js';

export const ENTITY_TYPES = ['credit_card', 'ssn', 'bank_account', 'email', 'phone', 'ip_address', 'secret'] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

export function isEntityType(s: string): s is EntityType {
  return (ENTITY_TYPES as readonly string[]).includes(s);
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

/** Issuer prefixes of the major networks; a Luhn-valid number outside them is most likely an id. */
function knownIssuer(d: string): boolean {
  const p2 = Number(d.slice(0, 2));
  const p3 = Number(d.slice(0, 3));
  const p4 = Number(d.slice(0, 4));
  const len = d.length;
  if (d[0] === '4') return len === 13 || len === 16 || len === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return len === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return len === 15; // Amex
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return len >= 16; // Discover
  if (p2 === 36 || p2 === 38 || (p3 >= 300 && p3 <= 305)) return len >= 14; // Diners
  if (p4 >= 3528 && p4 <= 3589) return len >= 16; // JCB
  if (p2 === 62) return len >= 16; // UnionPay
  return false;
}

const CARD_RE = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g;

export function hasCreditCard(text: string): boolean {
  for (const m of text.matchAll(CARD_RE)) {
    const raw = m[0];
    // Mixed separators ("1234-5678 9012") are not how cards are written.
    if (raw.includes(' ') && raw.includes('-')) continue;
    const d = raw.replace(/[ -]/g, '');
    if (d.length < 13 || d.length > 19 || /^(\d)\1+$/.test(d)) continue;
    if (knownIssuer(d) && luhnValid(d)) return true;
  }
  return false;
}

const SSN_RE = /(?<![\d-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\d-])/g;
const SSN_EXAMPLES = new Set(['078051120', '219099999', '123456789']);

export function hasSsn(text: string): boolean {
  for (const m of text.matchAll(SSN_RE)) {
    const area = Number(m[1]);
    if (area === 0 || area === 666 || area >= 900) continue;
    if (m[3] === '00' || m[4] === '0000') continue;
    if (SSN_EXAMPLES.has(m[1]! + m[3]! + m[4]!)) continue;
    return true;
  }
  return false;
}

/** IBAN lengths for the common countries; others must be 15..34 characters. */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AT: 20, BE: 16, BG: 22, CH: 21, CY: 28, CZ: 24, DE: 22, DK: 18, EE: 20, ES: 24, FI: 18, FR: 27, GB: 22,
  GR: 27, HR: 21, HU: 28, IE: 22, IS: 26, IT: 27, LI: 21, LT: 20, LU: 20, LV: 21, MC: 27, MT: 31, NL: 18, NO: 15,
  PL: 28, PT: 25, RO: 24, SE: 24, SI: 19, SK: 24, SM: 27, TR: 26, AE: 23, SA: 24, IL: 23, QA: 29, BR: 29,
};

export function ibanValid(raw: string): boolean {
  const s = raw.replace(/ /g, '').toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(s)) return false;
  const expected = IBAN_LENGTHS[s.slice(0, 2)];
  if (expected !== undefined ? s.length !== expected : s.length < 15 || s.length > 34) return false;
  const rearranged = s.slice(4) + s.slice(0, 4);
  let rem = 0;
  for (const ch of rearranged) {
    const c = ch.charCodeAt(0);
    const v = c >= 65 ? String(c - 55) : ch;
    for (const digit of v) rem = (rem * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return rem === 1;
}

export function abaValid(d: string): boolean {
  if (!/^\d{9}$/.test(d)) return false;
  const p = Number(d.slice(0, 2));
  if (!((p >= 0 && p <= 12) || (p >= 21 && p <= 32) || (p >= 61 && p <= 72) || p === 80)) return false;
  const n = (i: number): number => d.charCodeAt(i) - 48;
  const sum = 3 * (n(0) + n(3) + n(6)) + 7 * (n(1) + n(4) + n(7)) + (n(2) + n(5) + n(8));
  return sum % 10 === 0 && !/^0+$/.test(d);
}

const IBAN_RE = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b/gi;
const ABA_RE = /(?<!\d)\d{9}(?!\d)/g;
// A bare 9-digit number passes the ABA checksum ~4% of the time; require banking context nearby.
const ABA_CONTEXT = /\b(?:routing|aba|rtn|transit|bank|account|acct|wire|ach)\b/i;

export function hasBankAccount(text: string): boolean {
  for (const m of text.matchAll(IBAN_RE)) if (ibanValid(m[0])) return true;
  for (const m of text.matchAll(ABA_RE)) {
    if (!abaValid(m[0])) continue;
    const ctx = text.slice(Math.max(0, m.index! - 40), m.index! + 9 + 40);
    if (ABA_CONTEXT.test(ctx)) return true;
  }
  return false;
}

const EMAIL_RE = /[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b/;

export function hasEmail(text: string): boolean {
  return EMAIL_RE.test(text);
}

// NANP (area and exchange start 2-9) with separators, or E.164 with a leading +.
const NANP_RE = /(?<![\d-])(?:\+?1[ .-]?)?(?:\(([2-9]\d{2})\) ?|([2-9]\d{2})[ .-])([2-9]\d{2})[ .-](\d{4})(?![\d-])/;
const E164_RE = /(?<![\w+])\+[1-9](?:[ .-]?\d){7,14}(?!\d)/;

export function hasPhone(text: string): boolean {
  return NANP_RE.test(text) || E164_RE.test(text);
}

const IPV4_RE = /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])/g;
const IPV6_RE = /(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![0-9A-Fa-f:])/g;

export function hasIpAddress(text: string): boolean {
  for (const m of text.matchAll(IPV4_RE)) if (parseIPv4(m[0])) return true;
  for (const m of text.matchAll(IPV6_RE)) {
    // "12:30:45" times have colons but are not addresses; require a hex letter, '::' or 8 groups.
    const s = m[0];
    if (!/[a-fA-F]|::/.test(s) && s.split(':').length !== 8) continue;
    if (s.replace(/:/g, '') === '') continue;
    if (parseIPv6(s)) return true;
  }
  return false;
}

const SECRET_RES = [
  /\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA)[0-9A-Z]{16}\b/, // AWS access key id
  /\bgh[pousr]_[A-Za-z0-9]{36,255}\b/, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/,
  /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/, // PEM / OpenSSH / PGP private keys
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/, // Slack
  /\b[sr]k_live_[A-Za-z0-9]{20,}\b/, // Stripe
  /\bAIza[0-9A-Za-z_-]{35}\b/, // Google API key
  /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/, // JWT
];

export function shannonEntropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) {
    const p = c / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

const TOKEN_RE = /[A-Za-z0-9+/=_-]{24,}/g;

/**
 * Generic API keys: a 24+ character token mixing upper, lower and digits with entropy above
 * 4.2 bits/char. Hex (≤ 4 bits/char: hashes, UUIDs), words, paths and camelCase stay below.
 */
function hasHighEntropyToken(text: string): boolean {
  for (const m of text.matchAll(TOKEN_RE)) {
    const t = m[0];
    if (t.length > 512) continue;
    if (t.includes('/') && /^[\w-]+(?:\/[\w-]+){2,}/.test(t) && !/[+=]/.test(t)) continue; // paths
    if (!/[a-z]/.test(t) || !/[A-Z]/.test(t) || !/\d/.test(t)) continue;
    const digits = t.replace(/\D/g, '').length;
    if (digits < 3) continue;
    if (shannonEntropy(t) > 4.2) return true;
  }
  return false;
}

export function hasSecret(text: string): boolean {
  for (const re of SECRET_RES) if (re.test(text)) return true;
  return hasHighEntropyToken(text);
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
