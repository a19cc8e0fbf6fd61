/**
 * Decision records (`acgp.decisions`) from their UTF-8 bytes straight to TSV bytes, without JSON.parse.
 *
 * Why: decisions are the sink's largest table (one per trace). Parsing each record into an object graph,
 * mapping it to a row object and printing a TSV line was ~70 % of the sink's busy CPU (JSON.parse 19 %,
 * mapping 13 %, TSV 22 %, plus the garbage collector for all of it), and a string-level scanner still built
 * ~25 strings per row. This one reads the bytes once, remembers where each field's value is and copies
 * those bytes into the insert body; only the ledger draft's few fields become strings.
 *
 * Contract: a record is taken only when the result is exactly what the reference path gives (JSON.parse of
 * the UTF-8 text → `decisionRow` → `tsvEncoder(DECISION_COLUMNS)`, and `policyDecisionDraft`);
 * test/unit/adapters/clickhouse/decision-scan.test.ts checks this differentially. Anything outside the
 * plain form the tripwire stage writes is declined (nothing appended) and the caller takes the reference
 * path, which also produces the error for a bad record. Declined: invalid UTF-8; a backslash or control
 * character anywhere (strings then need neither unescaping nor TSV escaping); whitespace other than spaces
 * between top-level tokens; `null` or a wrongly typed value for a known field; a duplicated known field; a
 * missing or empty trace_id / agent_id / intervention; a missing event_time_ms (or decided_at_ms with an
 * ISO `timestamp` to fall back on); outcome lists whose text would not survive JSON.stringify unchanged
 * (whitespace, non-canonical numbers, duplicate or integer-like keys), or entries without a string id and a
 * boolean flag. Unknown fields are validated as JSON and skipped.
 */
import { isUtf8 } from 'node:buffer';
import { policyDecisionDraftOf, type LedgerDraft } from '../../engine/ledger/index.js';
import { DECLINE, JsonBytes, Spans, decline } from './json-bytes.js';

/** The fields of a taken record that the POLICY_DECISION ledger draft needs. */
export interface ScannedDecision {
  trace_id: string;
  agent_id: string;
  tenant: string | undefined;
  blueprint: string | undefined;
  intervention: string;
  approved: boolean | undefined;
  stage: string | undefined;
  reasons: string[];
  /** ids of tripwires with `fired: true`. */
  tripwiresFired: string[];
  /** ids of rules with `passed: false`. */
  rulesFailed: string[];
  engineVersion: string | undefined;
  eventTimeMs: number;
}

const APOS = 39;
const BACKSLASH = 92;
const COMMA = 44;
const LBRACE = 123;
const RBRACE = 125;
const LBRACK = 91;
const RBRACK = 93;
const D0 = 48;
const D9 = 57;
const TAB = 9;
const NL = 10;

// Known top-level fields: id = index + 1. A second occurrence declines (JSON.parse would keep the last).
const NAMES = [
  'trace_id', 'agent_id', 'tenant', 'blueprint', 'intervention', 'approved', 'stage', 'halted', 'severity', 'reasons',
  'tripwires', 'rules', 'latency_ms', 'event_time_ms', 'decided_at_ms', 'hook', 'tool', 'session_id', 'engine_version',
  'fallback', 'timestamp',
] as const;
const F = Object.fromEntries(NAMES.map((name, k) => [name, k + 1])) as Record<(typeof NAMES)[number], number>;
const NAME_BYTES = [new Uint8Array(0), ...NAMES.map((name) => Buffer.from(name, 'latin1'))];
const BY_LENGTH: number[][] = [];
NAMES.forEach((name, k) => (BY_LENGTH[name.length] ??= []).push(k + 1));
const ID_NAME = Buffer.from('id', 'latin1');
const FIRED_NAME = Buffer.from('fired', 'latin1');
const PASSED_NAME = Buffer.from('passed', 'latin1');

// Scanner state: a scan is synchronous, so one module-level cursor and span table serve every call.
const J = new JsonBytes();
/** Per field id: value span (string content without quotes, number text, whole list), or -1 when absent. */
const START = new Int32Array(NAMES.length + 1);
const END = new Int32Array(NAMES.length + 1);
/** Per field id: 1/0 for the booleans approved, halted, fallback. */
const BOOL = new Uint8Array(NAMES.length + 1);
/** Spans of the reasons, the fired tripwire ids and the failed rule ids. */
const REASONS = new Spans();
const FIRED = new Spans();
const FAILED = new Spans();

/**
 * A list of `{id, <flag>, …}` outcomes in exact form (its text is the row's JSON column). Pushes the id of
 * every entry whose flag equals `want`. The ledger draft reads the flag by truthiness and the row by
 * identity: with booleans they agree, so the flag must be a boolean (or, when not required, absent).
 */
function outcomes(flag: Uint8Array, want: number, flagRequired: boolean, ids: Spans): void {
  J.expect(LBRACK);
  if (J.peek() === RBRACK) {
    J.i++;
    return;
  }
  for (;;) {
    J.expect(LBRACE);
    let idFrom = -1;
    let idEnd = -1;
    let value = -1;
    const base = J.openKeys();
    if (J.peek() === RBRACE) J.i++;
    else {
      for (;;) {
        const k = J.key(base);
        const kEnd = J.strEnd;
        if (J.sameName(k, kEnd, ID_NAME)) {
          idFrom = J.str();
          idEnd = J.strEnd;
        } else if (J.sameName(k, kEnd, flag)) value = J.bool();
        else J.skip(2, true);
        const d = J.next();
        if (d === RBRACE) break;
        if (d !== COMMA) decline();
      }
    }
    J.closeKeys(base);
    if (idFrom < 0 || (value < 0 && flagRequired)) decline();
    if (value === want) ids.push(idFrom, idEnd);
    const d = J.next();
    if (d === RBRACK) return;
    if (d !== COMMA) decline();
  }
}

function fieldId(a: number, b: number): number {
  const candidates = BY_LENGTH[b - a];
  if (candidates === undefined) return 0;
  for (let c = 0; c < candidates.length; c++) if (J.sameName(a, b, NAME_BYTES[candidates[c]])) return candidates[c];
  return 0;
}

/** Scans the whole record into START/END/BOOL and the span lists; declines by throwing DECLINE. */
function scan(): void {
  START.fill(-1);
  REASONS.length = 0;
  FIRED.length = 0;
  FAILED.length = 0;
  J.ws();
  J.expect(LBRACE);
  J.ws();
  if (J.peek() === RBRACE) decline();
  for (;;) {
    J.ws();
    const k = J.key(-1);
    const id = fieldId(k, J.strEnd);
    J.ws();
    if (id === 0) J.skip(1, false);
    else {
      if (START[id] !== -1) decline();
      const from = J.i;
      switch (id) {
        case F.approved:
        case F.halted:
        case F.fallback:
          BOOL[id] = J.bool();
          break;
        case F.reasons:
          J.stringList(REASONS);
          break;
        case F.tripwires:
          outcomes(FIRED_NAME, 1, false, FIRED);
          break;
        case F.rules:
          outcomes(PASSED_NAME, 0, true, FAILED);
          break;
        case F.latency_ms:
        case F.event_time_ms:
        case F.decided_at_ms:
          J.number();
          break;
        case F.timestamp:
          J.skip(1, false); // only read when a time field is missing (declined below)
          break;
        default: {
          const s = J.str(); // the string fields
          START[id] = s;
          END[id] = J.strEnd;
          break;
        }
      }
      if (START[id] === -1) {
        START[id] = from;
        END[id] = J.i;
      }
    }
    J.ws();
    const c = J.next();
    if (c === RBRACE) break;
    if (c !== COMMA) decline();
  }
  J.ws();
  if (J.i !== J.n) decline();
  if (START[F.trace_id] < 0 || END[F.trace_id] === START[F.trace_id]) decline();
  if (START[F.agent_id] < 0 || END[F.agent_id] === START[F.agent_id]) decline();
  if (START[F.intervention] < 0 || END[F.intervention] === START[F.intervention]) decline();
  if (START[F.event_time_ms] < 0) decline();
  if (START[F.decided_at_ms] < 0 && START[F.timestamp] >= 0) decline();
}

const APPROVED = new Set(['ok', 'nudge', 'flag']);
const EMPTY = Buffer.alloc(0);

/** A field's bytes (nothing when absent) and a tab. Module functions, not closures in emit(): no allocation per row. */
function field(out: Buffer, p: number, id: number): number {
  if (START[id] >= 0) p = copy(out, p, START[id], END[id]);
  out[p] = TAB;
  return p + 1;
}

function flag(out: Buffer, p: number, on: boolean): number {
  out[p] = on ? 49 : D0;
  out[p + 1] = TAB;
  return p + 2;
}

/** `src[a, b)` into `out` at `p`; returns the new position. */
function copy(out: Buffer, p: number, a: number, b: number): number {
  const src = J.src;
  if (b - a > 32) return p + src.copy(out, p, a, b);
  for (let k = a; k < b; k++) out[p++] = src[k];
  return p;
}

function ascii(out: Buffer, p: number, text: string): number {
  for (let k = 0; k < text.length; k++) out[p++] = text.charCodeAt(k);
  return p;
}

/** An Array(String) literal of the spans: `['a','b\\'c']` (no other escape can occur: see the contract). */
function list(out: Buffer, p: number, spans: Spans): number {
  const src = J.src;
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

function text(id: number): string | undefined {
  return START[id] < 0 ? undefined : J.src.toString('utf8', START[id], END[id]);
}

function texts(spans: Spans): string[] {
  const out = new Array<string>(spans.length >> 1);
  for (let k = 0; k < spans.length; k += 2) out[k >> 1] = J.src.toString('utf8', spans.a[k], spans.a[k + 1]);
  return out;
}

/** The value epochMs wrote last. */
let lastMs = 0;

/** An epoch-ms field as decisionRow prints it (non-negative, truncated); digits-only text is copied as is. */
function epochMs(out: Buffer, p: number, id: number): number {
  const a = START[id];
  const b = END[id];
  const src = J.src;
  let plain = b - a <= 15;
  for (let k = a; plain && k < b; k++) plain = src[k] >= D0 && src[k] <= D9;
  const v = Number(src.toString('latin1', a, b));
  if (plain) {
    lastMs = v;
    return copy(out, p, a, b);
  }
  if (!Number.isFinite(v) || v < 0) decline();
  lastMs = Math.trunc(v);
  return ascii(out, p, String(lastMs));
}

/**
 * Appends decision records' TSV lines (DECISION_COLUMNS order, tables.ts) to one growing buffer: an insert
 * body for ClickHouseStore.insertEncoded. Each line equals tsvEncoder's line for decisionRow of the record.
 */
export class DecisionTsvWriter {
  private buf: Buffer;
  private len = 0;
  private readonly ingested: string;

  constructor(ingestedAtMs: number, initialBytes = 1 << 16) {
    this.buf = Buffer.allocUnsafe(initialBytes);
    this.ingested = String(ingestedAtMs);
  }

  /** Lines written so far. */
  count = 0;

  /** Scans one record: appends its line and returns the ledger draft's fields, or returns undefined and appends nothing. */
  add(value: Buffer): ScannedDecision | undefined {
    if (!isUtf8(value)) return undefined;
    J.reset(value);
    try {
      scan();
      return this.emit();
    } catch (e) {
      if (e === DECLINE) return undefined;
      throw e;
    } finally {
      J.reset(EMPTY);
    }
  }

  /** The lines written (a view of the internal buffer: use it before the next add). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.len);
  }

  private emit(): ScannedDecision {
    // Every input byte lands at most twice (an outcome id is in its list and in the JSON column), doubled by
    // escaping a quote at worst, plus the fixed fields.
    const need = this.len + 4 * J.n + 256;
    if (need > this.buf.length) {
      const b = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(b, 0, 0, this.len);
      this.buf = b;
    }
    const out = this.buf;
    let p = this.len;
    const intervention = text(F.intervention) as string;
    p = field(out, p, F.trace_id);
    p = field(out, p, F.agent_id);
    p = field(out, p, F.tenant);
    p = field(out, p, F.blueprint);
    p = field(out, p, F.intervention);
    p = flag(out, p, START[F.approved] >= 0 ? BOOL[F.approved] === 1 : APPROVED.has(intervention));
    p = field(out, p, F.stage);
    p = flag(out, p, START[F.halted] >= 0 && BOOL[F.halted] === 1);
    p = field(out, p, F.severity);
    p = list(out, p, REASONS);
    out[p++] = TAB;
    p = list(out, p, FIRED);
    out[p++] = TAB;
    p = list(out, p, FAILED);
    out[p++] = TAB;
    if (START[F.tripwires] >= 0) p = field(out, p, F.tripwires);
    else p = ascii(out, p, '[]\t');
    if (START[F.rules] >= 0) p = field(out, p, F.rules);
    else p = ascii(out, p, '[]\t');
    if (START[F.latency_ms] >= 0) {
      const v = Number(J.src.toString('latin1', START[F.latency_ms], END[F.latency_ms]));
      if (!Number.isFinite(v)) decline();
      p = ascii(out, p, String(v));
    } else out[p++] = D0;
    out[p++] = TAB;
    const eventFrom = p;
    p = epochMs(out, p, F.event_time_ms);
    const eventTimeMs = lastMs;
    const eventTo = p;
    out[p++] = TAB;
    if (START[F.decided_at_ms] >= 0) p = epochMs(out, p, F.decided_at_ms);
    else {
      out.copyWithin(p, eventFrom, eventTo);
      p += eventTo - eventFrom;
    }
    out[p++] = TAB;
    p = field(out, p, F.hook);
    p = field(out, p, F.tool);
    p = field(out, p, F.session_id);
    p = field(out, p, F.engine_version);
    p = flag(out, p, START[F.fallback] >= 0 && BOOL[F.fallback] === 1);
    p = ascii(out, p, this.ingested);
    out[p++] = NL;
    this.len = p;
    this.count++;
    return {
      trace_id: text(F.trace_id) as string,
      agent_id: text(F.agent_id) as string,
      tenant: text(F.tenant),
      blueprint: text(F.blueprint),
      intervention,
      approved: START[F.approved] >= 0 ? BOOL[F.approved] === 1 : undefined,
      stage: text(F.stage),
      reasons: texts(REASONS),
      tripwiresFired: texts(FIRED),
      rulesFailed: texts(FAILED),
      engineVersion: text(F.engine_version),
      eventTimeMs,
    };
  }
}

/** The POLICY_DECISION ledger draft of a taken record; equal to policyDecisionDraft of the parsed record with the row's time. */
export function scannedDecisionDraft(d: ScannedDecision): LedgerDraft {
  return policyDecisionDraftOf({
    trace_id: d.trace_id, agent_id: d.agent_id, tenant: d.tenant, blueprint: d.blueprint, intervention: d.intervention,
    approved: d.approved, stage: d.stage, reasons: d.reasons, tripwiresFired: d.tripwiresFired, rulesFailed: d.rulesFailed,
    engine_version: d.engineVersion, ts_ms: d.eventTimeMs,
  });
}
