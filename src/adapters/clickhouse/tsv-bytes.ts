/**
 * Byte output for the plain-record writers (decision-writer.ts, verdict-writer.ts): value spans of a scanned
 * record copied into a growing buffer as TSV fields or JSON. The scanners guarantee that string spans hold
 * no backslash, control character, quote or invalid UTF-8, so copying needs no escaping except `'` inside
 * TSV array literals. Module functions, not closures: nothing is allocated per field.
 */
import { INTERVENTIONS, isApproved } from '../../engine/types.js';
import type { JsonBytes, Spans } from './json-bytes.js';

export const TAB = 9;
export const NL = 10;
const APOS = 39;
const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const LBRACK = 91;
const RBRACK = 93;

export const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');

const APPROVED_INTERVENTIONS = INTERVENTIONS.filter(isApproved).map(latin1);

/** Whether bytes [a, b) name an intervention PVS-1 counts as approved (engine isApproved: ok, nudge, flag). */
export function approvedIntervention(j: JsonBytes, a: number, b: number): boolean {
  for (let k = 0; k < APPROVED_INTERVENTIONS.length; k++) if (j.sameName(a, b, APPROVED_INTERVENTIONS[k])) return true;
  return false;
}

/** A buffer that only grows; views handed out earlier keep the old memory (bytes are never rewritten). */
export class Growing {
  buf: Buffer;
  len = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafe(Math.max(256, bytes));
  }

  /** The buffer, with room for `n` more bytes at `len`. */
  reserve(n: number): Buffer {
    if (this.len + n > this.buf.length) {
      const b = Buffer.allocUnsafe(Math.max(this.len + n, this.buf.length * 2));
      this.buf.copy(b, 0, 0, this.len);
      this.buf = b;
    }
    return this.buf;
  }
}

/** `src[a, b)` into `out` at `p`; returns the new position. */
export function copy(out: Buffer, p: number, src: Buffer, a: number, b: number): number {
  if (b - a > 32) return p + src.copy(out, p, a, b);
  for (let k = a; k < b; k++) out[p++] = src[k];
  return p;
}

export function lit(out: Buffer, p: number, b: Uint8Array): number {
  if (b.length > 16) {
    out.set(b, p);
    return p + b.length;
  }
  for (let k = 0; k < b.length; k++) out[p++] = b[k];
  return p;
}

export function ascii(out: Buffer, p: number, text: string): number {
  for (let k = 0; k < text.length; k++) out[p++] = text.charCodeAt(k);
  return p;
}

/** A 0/1 field and its tab. */
export function flag(out: Buffer, p: number, on: boolean): number {
  out[p] = on ? 49 : 48;
  out[p + 1] = TAB;
  return p + 2;
}

/** An Array(String) literal of the spans: `['a','b\'c']`. */
export function tsvList(out: Buffer, p: number, src: Buffer, spans: Spans): number {
  out[p++] = LBRACK;
  for (let k = 0; k < spans.length; k += 2) {
    if (k > 0) out[p++] = COMMA;
    out[p++] = APOS;
    for (let j = spans.a[k]; j < spans.a[k + 1]; j++) {
      const c = src[j];
      if (c === APOS) out[p++] = BACKSLASH;
      out[p++] = c;
    }
    out[p++] = APOS;
  }
  out[p++] = RBRACK;
  return p;
}

/** A JSON array of the spans as strings: `["a","b"]`. */
export function jsonList(out: Buffer, p: number, src: Buffer, spans: Spans): number {
  out[p++] = LBRACK;
  for (let k = 0; k < spans.length; k += 2) {
    if (k > 0) out[p++] = COMMA;
    out[p++] = QUOTE;
    p = copy(out, p, src, spans.a[k], spans.a[k + 1]);
    out[p++] = QUOTE;
  }
  out[p++] = RBRACK;
  return p;
}
