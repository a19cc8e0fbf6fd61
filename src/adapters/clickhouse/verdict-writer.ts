/**
 * Verdict records (`acgp.verdicts`) from their UTF-8 bytes straight to TSV bytes (VERDICT_COLUMNS order,
 * tables.ts), without JSON.parse: the verdicts table gets one row per scored trace, like decisions.
 *
 * Contract (as decision-scan.ts): a record is taken only when its line is exactly what the reference path
 * gives (JSON.parse → `verdictRow` → `tsvEncoder(VERDICT_COLUMNS)`); test/unit/adapters/clickhouse/
 * verdict-writer.test.ts checks this differentially. Anything else is declined and takes the reference path.
 * Declined besides what json-bytes.ts declines (escapes, control characters, other whitespace, invalid
 * UTF-8): a missing or non-object `verdict`; `metrics` or the verdict's text that JSON.stringify would not
 * reproduce byte for byte (both are stored as JSON columns); a wrongly typed known field (e.g. a string ctq,
 * a non-string metric name, a null signature); a duplicated known field; a missing or empty trace_id /
 * agent_id / intervention; a missing event_time_ms, or a missing scored_at_ms with an ISO `timestamp`.
 */
import { isUtf8 } from 'node:buffer';
import { DECLINE, FieldTable, JsonBytes, Spans, decline } from './json-bytes.js';
import { StewardError } from '../../errors.js';
import { Growing, NL, TAB, approvedIntervention, ascii, copy, flag, latin1, lit, tsvList } from './tsv-bytes.js';

const COMMA = 44;
const LBRACE = 123;
const LBRACK = 91;
const RBRACK = 93;
const QUOTE = 34;

const FIELDS = new FieldTable([
  'trace_id', 'agent_id', 'tenant', 'blueprint', 'intervention', 'approved', 'stage', 'ctq', 'risk', 'metrics',
  'verdict', 'event_time_ms', 'scored_at_ms', 'timestamp',
] as const);
const F = FIELDS.id;
const REQUIRED = [F.trace_id, F.agent_id, F.intervention];
const K = {
  approved: latin1('approved'), confidence: latin1('confidence_score'), violations: latin1('policy_violations'),
  metadata: latin1('metadata'), signature: latin1('signature'), tenantId: latin1('tenant_id'),
  name: latin1('name'), score: latin1('score'), status: latin1('status'),
};
const NULL_TAB = latin1('\\N\t');
const NULL = latin1('NULL');
const EMPTY_LIST_TAB = latin1('[]\t');

// Scanner state: synchronous, so module-level tables serve every call (valid until the next scan).
const J = new JsonBytes();
/** Per top-level field id: value span (string content, number text, whole object/array) or -1. */
const START = new Int32Array(FIELDS.size);
const END = new Int32Array(FIELDS.size);
const BOOL = new Uint8Array(FIELDS.size);
/** Numbers as verdictRow reads them; NULLED: the field was JSON null (ctq, risk). */
const NUM = new Float64Array(FIELDS.size);
const NULLED = new Uint8Array(FIELDS.size);
/** Epoch-ms texts that are digits only (≤ 15, exact): printed as written. */
const PLAIN = new Uint8Array(FIELDS.size);
const VIOLATIONS = new Spans();
/** Per metric, one span each: name and status (empty when absent), score text ([-1, -1] for NULL). */
const M_NAME = new Spans();
const M_STATUS = new Spans();
const M_SCORE = new Spans();
/** Inside the verdict: approved (-1 absent), confidence_score, signature and metadata.{tenant_id, signature}. */
const V = { approved: -1, confidence: 0, hasConfidence: false, sigA: -1, sigB: -1, metaSigA: -1, metaSigB: -1, tenantA: -1, tenantB: -1 };

/** A signature value (not null): a string's content, or the exact JSON text of anything else. Returns [a, b) via out. */
function signature(): [number, number] {
  const c = J.peek();
  if (c === QUOTE) {
    const a = J.str();
    return [a, J.strEnd];
  }
  if (c === 110) decline(); // null falls back to the metadata's signature in verdictRow: left to it
  const a = J.i;
  J.skip(3, true);
  return [a, J.i];
}

// Key handlers, allocated once (no closure per record).
const onMetadataKey = (k: number, kEnd: number): void => {
  if (J.sameName(k, kEnd, K.tenantId) && J.peek() === QUOTE) {
    V.tenantA = J.str();
    V.tenantB = J.strEnd;
  } else if (J.sameName(k, kEnd, K.signature)) [V.metaSigA, V.metaSigB] = signature();
  else J.skip(3, true);
};

const onVerdictKey = (k: number, kEnd: number): void => {
  if (J.sameName(k, kEnd, K.approved)) V.approved = J.bool();
  else if (J.sameName(k, kEnd, K.confidence)) {
    V.confidence = J.canonicalNumber();
    V.hasConfidence = true;
  } else if (J.sameName(k, kEnd, K.violations)) J.stringList(VIOLATIONS, true);
  else if (J.sameName(k, kEnd, K.metadata)) {
    if (J.peek() === LBRACE) J.exactObject(onMetadataKey);
    else decline();
  } else if (J.sameName(k, kEnd, K.signature)) [V.sigA, V.sigB] = signature();
  else J.skip(2, true);
};

/** The metric being read: name and status spans ([0, 0]: absent, printed as ''), score text ([-1, -1]: NULL). */
const M = { nameA: 0, nameB: 0, statusA: 0, statusB: 0, scoreA: -1, scoreB: -1 };

const onMetricKey = (k: number, kEnd: number): void => {
  if (J.sameName(k, kEnd, K.name)) {
    M.nameA = J.str();
    M.nameB = J.strEnd;
  } else if (J.sameName(k, kEnd, K.status)) {
    M.statusA = J.str();
    M.statusB = J.strEnd;
  } else if (J.sameName(k, kEnd, K.score)) {
    if (J.peek() === 110) J.skip(3, true); // null
    else {
      M.scoreA = J.i;
      J.canonicalNumber();
      M.scoreB = J.i;
    }
  } else J.skip(3, true);
};

const onMetric = (): void => {
  M.nameA = M.nameB = M.statusA = M.statusB = 0;
  M.scoreA = M.scoreB = -1;
  J.exactObject(onMetricKey);
  M_NAME.push(M.nameA, M.nameB);
  M_STATUS.push(M.statusA, M.statusB);
  M_SCORE.push(M.scoreA, M.scoreB);
};

/** One known field's value (a module function, not a closure: nothing allocated per record). */
function onField(id: number): void {
  if (id === F.approved) BOOL[id] = J.bool();
  else if (id === F.ctq || id === F.risk) {
    if (J.peek() === 110) {
      J.skip(1, false);
      NULLED[id] = 1;
    } else {
      const v = Number(J.src.toString('latin1', J.number(), J.i));
      if (!Number.isFinite(v)) decline();
      NUM[id] = v;
    }
  } else if (id === F.metrics) J.exactArray(onMetric);
  else if (id === F.verdict) J.exactObject(onVerdictKey);
  else if (id === F.event_time_ms || id === F.scored_at_ms) {
    NUM[id] = J.epochMs(J.number(), J.i);
    PLAIN[id] = J.plain ? 1 : 0;
  } else if (id === F.timestamp) J.skip(1, false);
  else {
    START[id] = J.str(); // the string fields
    END[id] = J.strEnd;
  }
}

function scan(): void {
  START.fill(-1);
  NULLED.fill(0);
  VIOLATIONS.length = 0;
  M_NAME.length = 0;
  M_STATUS.length = 0;
  M_SCORE.length = 0;
  V.approved = -1;
  V.hasConfidence = false;
  V.sigA = V.metaSigA = V.tenantA = -1;
  J.record(FIELDS, START, END, onField);
  for (const id of REQUIRED) JsonBytes.required(START, END, id);
  if (START[F.verdict] < 0 || START[F.event_time_ms] < 0) decline();
  if (START[F.scored_at_ms] < 0 && START[F.timestamp] >= 0) decline();
}

export class VerdictTsvWriter {
  private readonly tsv: Growing;
  private readonly ingested: string;

  constructor(ingestedAtMs: number, initialBytes = 1 << 16) {
    this.tsv = new Growing(initialBytes);
    this.ingested = String(ingestedAtMs);
  }

  /** Appends the record's TSV line and returns true when it is in the plain form; else appends nothing. */
  add(value: Buffer): boolean {
    if (!isUtf8(value)) return false;
    J.reset(value);
    try {
      scan();
    } catch (e) {
      if (e === DECLINE) return false;
      throw e;
    }
    // Every input byte lands at most three times (a metric name in the metrics JSON and, quote-escaped, in the
    // names list), plus tabs, numbers printed by String(), and per metric up to 11 bytes that need no input
    // (`'',NULL,'',` for `{}`). Typed arrays drop writes past their end, so the end is checked before it is
    // kept: a failed record leaves the buffer as it was.
    const metrics = M_SCORE.length >> 1;
    const end = this.line(this.tsv.reserve(4 * J.n + 512 + 16 * metrics + 4 * (VIOLATIONS.length >> 1)));
    if (end > this.tsv.buf.length) throw new StewardError('STEWARD_INTERNAL', 'verdict writer ran past its reserved buffer');
    this.tsv.len = end;
    return true;
  }

  /** The lines written (a view of the internal buffer). */
  bytes(): Buffer {
    return this.tsv.buf.subarray(0, this.tsv.len);
  }

  /** Writes the line at `tsv.len`; returns its end (the caller commits it). */
  private line(out: Buffer): number {
    const src = J.src;
    let p = this.tsv.len;
    p = field(out, p, F.trace_id);
    p = field(out, p, F.agent_id);
    if (START[F.tenant] < 0 && V.tenantA >= 0) p = copy(out, p, src, V.tenantA, V.tenantB);
    p = field(out, p, F.tenant);
    p = field(out, p, F.blueprint);
    p = field(out, p, F.intervention);
    p = flag(out, p, START[F.approved] >= 0 ? BOOL[F.approved] === 1 : V.approved >= 0 ? V.approved === 1 : approvedIntervention(J, START[F.intervention], END[F.intervention]));
    p = field(out, p, F.stage);
    p = nullable(out, p, F.ctq);
    p = nullable(out, p, F.risk);
    p = ascii(out, p, V.hasConfidence ? String(V.confidence) : '0');
    out[p++] = TAB;
    p = tsvList(out, p, src, VIOLATIONS);
    out[p++] = TAB;
    p = tsvList(out, p, src, M_NAME);
    out[p++] = TAB;
    out[p++] = LBRACK;
    for (let k = 0; k < M_SCORE.length; k += 2) {
      if (k > 0) out[p++] = COMMA;
      p = M_SCORE.a[k] < 0 ? lit(out, p, NULL) : copy(out, p, src, M_SCORE.a[k], M_SCORE.a[k + 1]);
    }
    out[p++] = RBRACK;
    out[p++] = TAB;
    p = tsvList(out, p, src, M_STATUS);
    out[p++] = TAB;
    p = START[F.metrics] >= 0 ? field(out, p, F.metrics) : lit(out, p, EMPTY_LIST_TAB);
    p = field(out, p, F.verdict);
    if (V.sigA >= 0) p = copy(out, p, src, V.sigA, V.sigB);
    else if (V.metaSigA >= 0) p = copy(out, p, src, V.metaSigA, V.metaSigB);
    out[p++] = TAB;
    p = epoch(out, p, F.event_time_ms);
    p = epoch(out, p, START[F.scored_at_ms] >= 0 ? F.scored_at_ms : F.event_time_ms);
    p = ascii(out, p, this.ingested);
    out[p++] = NL;
    return p;
  }
}

/** A field's bytes (nothing when absent) and a tab. */
function field(out: Buffer, p: number, id: number): number {
  if (START[id] >= 0) p = copy(out, p, J.src, START[id], END[id]);
  out[p] = TAB;
  return p + 1;
}

/** A Nullable(Float64) field: `\N` for null or absent. */
function nullable(out: Buffer, p: number, id: number): number {
  if (START[id] < 0 || NULLED[id] === 1) return lit(out, p, NULL_TAB);
  p = ascii(out, p, String(NUM[id]));
  out[p] = TAB;
  return p + 1;
}

/** An epoch-ms field: the digits as written when exact, else String() of the truncated value. */
function epoch(out: Buffer, p: number, id: number): number {
  p = PLAIN[id] === 1 ? copy(out, p, J.src, START[id], END[id]) : ascii(out, p, String(NUM[id]));
  out[p] = TAB;
  return p + 1;
}
