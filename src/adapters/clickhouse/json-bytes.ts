/**
 * A strict JSON cursor over UTF-8 bytes for the sink's plain-record scanners (decision-scan.ts,
 * verdict-writer.ts). It knows only the plain form: strings without escapes or control characters, spaces as
 * the only whitespace. Anything else, valid JSON or not, "declines" (throws DECLINE) and the caller falls
 * back to JSON.parse, which is also what reports a malformed record. Scanning allocates nothing: exact-mode
 * keys share one reusable stack.
 */

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const LBRACE = 123;
const RBRACE = 125;
const LBRACK = 91;
const RBRACK = 93;
const SPACE = 32;
const MINUS = 45;
const PLUS = 43;
const DOT = 46;
const D0 = 48;
const D9 = 57;
/** Deeper nesting than this is left to JSON.parse. */
const MAX_DEPTH = 32;
/**
 * More keys than this in one exact-mode object are left to JSON.parse: the duplicate check compares each key
 * with the earlier ones (quadratic; 20 000 keys took ~0.5 s against JSON.parse's 8 ms).
 */
const MAX_EXACT_KEYS = 64;

/** Thrown (a constant, never an Error: no stack captured) when the input is not in the plain form. */
export const DECLINE = { declined: true } as const;

export function decline(): never {
  throw DECLINE;
}

/** [start, end) byte spans, as pairs in one growing Int32Array (reused across records). */
export class Spans {
  a = new Int32Array(64);
  length = 0;

  push(s: number, e: number): void {
    if (this.length + 2 > this.a.length) {
      const b = new Int32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.length++] = s;
    this.a[this.length++] = e;
  }
}

/** Known field names → ids 1..n (0: unknown), matched on the key's bytes without making a string. */
export class FieldTable<N extends string> {
  readonly id: Record<N, number>;
  private readonly names: Uint8Array[] = [new Uint8Array(0)];
  private readonly byLength: number[][] = [];

  constructor(names: readonly N[]) {
    this.id = Object.fromEntries(names.map((name, k) => [name, k + 1])) as Record<N, number>;
    names.forEach((name, k) => {
      this.names.push(Buffer.from(name, 'latin1'));
      (this.byLength[name.length] ??= []).push(k + 1);
    });
  }

  get size(): number {
    return this.names.length;
  }

  /** The id of the key at bytes [a, b) of the cursor's input, or 0. */
  lookup(j: JsonBytes, a: number, b: number): number {
    const candidates = this.byLength[b - a];
    if (candidates === undefined) return 0;
    for (let c = 0; c < candidates.length; c++) if (j.sameName(a, b, this.names[candidates[c]])) return candidates[c];
    return 0;
  }
}

export class JsonBytes {
  src: Buffer = Buffer.alloc(0);
  n = 0;
  /** The cursor. */
  i = 0;
  /** End of the string str() read last. */
  strEnd = 0;
  /** Keys of the exact-mode objects being read, innermost last (one stack: no allocation per object). */
  private readonly keys = new Spans();

  reset(src: Buffer): void {
    this.src = src;
    this.n = src.length;
    this.i = 0;
    this.keys.length = 0;
  }

  /** Starts an exact-mode object's key set; pass the result to key() and closeKeys(). */
  openKeys(): number {
    return this.keys.length;
  }

  closeKeys(base: number): void {
    this.keys.length = base;
  }

  /** Spaces only: JSON.stringify writes no other whitespace, and a raw tab/newline in a string would be invalid. */
  ws(): void {
    while (this.i < this.n && this.src[this.i] === SPACE) this.i++;
  }

  expect(c: number): void {
    if (this.i >= this.n || this.src[this.i] !== c) decline();
    this.i++;
  }

  /** The byte at the cursor, consumed. */
  next(): number {
    return this.src[this.i++];
  }

  peek(): number {
    return this.src[this.i];
  }

  /** A string at the cursor: returns its content's start; `strEnd` is its end. */
  str(): number {
    const src = this.src;
    let i = this.i;
    if (i >= this.n || src[i] !== QUOTE) decline();
    const from = ++i;
    for (;;) {
      if (i >= this.n) decline();
      const b = src[i];
      if (b === QUOTE) break;
      if (b === BACKSLASH || b < SPACE) decline();
      i++;
    }
    this.strEnd = i;
    this.i = i + 1;
    return from;
  }

  private digits(): void {
    const from = this.i;
    while (this.i < this.n && this.src[this.i] >= D0 && this.src[this.i] <= D9) this.i++;
    if (this.i === from) decline();
  }

  /** A JSON number at the cursor (strict grammar, as JSON.parse); returns its start (the cursor is its end). */
  number(): number {
    const src = this.src;
    const from = this.i;
    if (src[this.i] === MINUS) this.i++;
    if (src[this.i] === D0) this.i++;
    else this.digits();
    if (this.i < this.n && src[this.i] === DOT) {
      this.i++;
      this.digits();
    }
    if (this.i < this.n && (src[this.i] === 101 || src[this.i] === 69)) {
      this.i++;
      if (src[this.i] === PLUS || src[this.i] === MINUS) this.i++;
      this.digits();
    }
    return from;
  }

  private literal(word: string): void {
    for (let k = 0; k < word.length; k++) if (this.src[this.i + k] !== word.charCodeAt(k)) decline();
    this.i += word.length;
  }

  /** Whether the last epochMs() text was digits only (≤ 15 digits: exact), so it prints as written. */
  plain = false;

  /**
   * A number [a, b) read as an epoch-ms field of the sink rows: finite, non-negative, truncated (else
   * declines). Digits-only text is summed without making a string.
   */
  epochMs(a: number, b: number): number {
    const src = this.src;
    let v = 0;
    let plain = b - a <= 15;
    for (let k = a; plain && k < b; k++) {
      const c = src[k];
      if (c < D0 || c > D9) plain = false;
      else v = v * 10 + (c - D0);
    }
    this.plain = plain;
    if (plain) return v;
    v = Number(src.toString('latin1', a, b));
    if (!Number.isFinite(v) || v < 0) decline();
    return Math.trunc(v);
  }

  /** `true` → 1, `false` → 0; anything else declines. */
  bool(): number {
    const c = this.src[this.i];
    if (c === 116) {
      this.literal('true');
      return 1;
    }
    if (c === 102) {
      this.literal('false');
      return 0;
    }
    return decline();
  }

  /** Whether bytes [a, b) equal `name`. */
  sameName(a: number, b: number, name: Uint8Array): boolean {
    if (b - a !== name.length) return false;
    for (let k = 0; k < name.length; k++) if (this.src[a + k] !== name[k]) return false;
    return true;
  }

  private sameBytes(a: number, b: number, c: number, d: number): boolean {
    if (b - a !== d - c) return false;
    for (let k = 0; k < b - a; k++) if (this.src[a + k] !== this.src[c + k]) return false;
    return true;
  }

  /**
   * An object key and its colon; returns the key's start (`strEnd` its end). `base` (exact mode, no spaces;
   * -1 otherwise): the object's openKeys(); a key repeated within the object, or an integer-like key (V8
   * orders those first, so JSON.stringify would move it), declines.
   */
  key(base: number): number {
    const from = this.str();
    const end = this.strEnd;
    if (base >= 0) {
      if (end > from && this.src[from] >= D0 && this.src[from] <= D9) decline();
      const keys = this.keys;
      if (keys.length - base >= 2 * MAX_EXACT_KEYS) decline();
      for (let k = base; k < keys.length; k += 2) if (this.sameBytes(keys.a[k], keys.a[k + 1], from, end)) decline();
      keys.push(from, end);
    } else this.ws();
    this.expect(COLON);
    return from;
  }

  /**
   * Validates and skips any JSON value. `exact`: its text must also be what JSON.stringify writes for its
   * parse (no whitespace, canonical numbers, no duplicate or integer-like keys), so the text can be copied
   * where the reference path would print the parsed value.
   */
  skip(depth: number, exact: boolean): void {
    if (depth > MAX_DEPTH) decline();
    if (!exact) this.ws();
    const c = this.src[this.i];
    if (c === QUOTE) this.str();
    else if (c === LBRACE || c === LBRACK) {
      const close = c === LBRACE ? RBRACE : RBRACK;
      const base = c === LBRACE && exact ? this.openKeys() : -1;
      this.i++;
      if (!exact) this.ws();
      if (this.src[this.i] === close) {
        this.i++;
        return;
      }
      for (;;) {
        if (c === LBRACE) {
          if (!exact) this.ws();
          this.key(base);
        }
        this.skip(depth + 1, exact);
        if (!exact) this.ws();
        const d = this.src[this.i++];
        if (d === close) break;
        if (d !== COMMA) decline();
      }
      if (base >= 0) this.closeKeys(base);
    } else if (c === 116) this.literal('true');
    else if (c === 102) this.literal('false');
    else if (c === 110) this.literal('null');
    else {
      const from = this.number();
      if (exact) this.checkCanonical(from);
    }
  }

  /**
   * A record: one top-level object (spaces allowed between tokens), then nothing but spaces. For each known
   * field (`fields`; a repeated one declines, as JSON.parse would keep the last) `onField(id)` consumes the
   * value; its span goes to `start`/`end` unless onField set them (strings: their content). Unknown fields are
   * validated and skipped. `start` must come filled with -1.
   */
  record(fields: FieldTable<string>, start: Int32Array, end: Int32Array, onField: (id: number) => void): void {
    this.ws();
    this.expect(LBRACE);
    for (;;) {
      this.ws();
      const k = this.key(-1);
      const id = fields.lookup(this, k, this.strEnd);
      this.ws();
      if (id === 0) this.skip(1, false);
      else {
        if (start[id] !== -1) decline();
        const from = this.i;
        onField(id);
        if (start[id] === -1) {
          start[id] = from;
          end[id] = this.i;
        }
      }
      this.ws();
      const c = this.next();
      if (c === RBRACE) break;
      if (c !== COMMA) decline();
    }
    this.ws();
    if (this.i !== this.n) decline();
  }

  /** A required string field: present and not empty (else declines). */
  static required(start: Int32Array, end: Int32Array, id: number): void {
    if (start[id] < 0 || end[id] === start[id]) decline();
  }

  /** A list of strings; their content spans go to `out`. `exact`: no spaces (the list is part of a copied text). */
  stringList(out: Spans, exact = false): void {
    this.expect(LBRACK);
    if (!exact) this.ws();
    if (this.src[this.i] === RBRACK) {
      this.i++;
      return;
    }
    for (;;) {
      if (!exact) this.ws();
      const from = this.str();
      out.push(from, this.strEnd);
      if (!exact) this.ws();
      const d = this.src[this.i++];
      if (d === RBRACK) return;
      if (d !== COMMA) decline();
    }
  }

  /** The number at the cursor in exact form: finite, and its text is what JSON.stringify prints for it. */
  canonicalNumber(): number {
    return this.checkCanonical(this.number());
  }

  private checkCanonical(from: number): number {
    const t = this.src.toString('latin1', from, this.i);
    const v = Number(t);
    if (!Number.isFinite(v) || String(v) !== t) decline();
    return v;
  }

  /** An exact-form object: `onKey(start, end)` for each key, which must consume its value. */
  exactObject(onKey: (k: number, kEnd: number) => void): void {
    const base = this.openKeys();
    this.expect(LBRACE);
    if (this.src[this.i] === RBRACE) this.i++;
    else
      for (;;) {
        const k = this.key(base);
        onKey(k, this.strEnd);
        const d = this.next();
        if (d === RBRACE) break;
        if (d !== COMMA) decline();
      }
    this.closeKeys(base);
  }

  /** An exact-form array: `onItem()` for each element, which must consume it. */
  exactArray(onItem: () => void): void {
    this.expect(LBRACK);
    if (this.src[this.i] === RBRACK) {
      this.i++;
      return;
    }
    for (;;) {
      onItem();
      const d = this.next();
      if (d === RBRACK) return;
      if (d !== COMMA) decline();
    }
  }
}
