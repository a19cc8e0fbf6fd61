/**
 * Decision records (`acgp.decisions`) scanned from their UTF-8 bytes without JSON.parse: where each field's
 * value is (byte spans), for DecisionTsvWriter (decision-writer.ts) to copy into the insert body and the
 * ledger draft.
 *
 * Why: decisions are the sink's largest table (one per trace). Parsing each record into an object graph,
 * mapping it to a row object and printing a TSV line was ~70 % of the sink's busy CPU (JSON.parse 19 %,
 * mapping 13 %, TSV 22 %, plus the garbage collector for all of it), and a string-level scanner still built
 * ~25 strings per row.
 *
 * Contract: a record is taken only when the result is exactly what the reference path gives (JSON.parse of
 * the UTF-8 text → `decisionRow` → `tsvEncoder(DECISION_COLUMNS)`, and JSON.stringify of
 * `policyDecisionDraft`); test/unit/adapters/clickhouse/decision-scan.test.ts checks this differentially.
 * Anything outside the plain form the tripwire stage writes is declined and the caller takes the reference
 * path, which also produces the error for a bad record. Declined: invalid UTF-8; a backslash or control
 * character anywhere (strings then need neither unescaping nor escaping, in TSV or JSON); whitespace other
 * than spaces between top-level tokens; `null` or a wrongly typed value for a known field; a duplicated
 * known field; a missing or empty trace_id / agent_id / intervention; a missing event_time_ms (or
 * decided_at_ms with an ISO `timestamp` to fall back on); outcome lists whose text would not survive
 * JSON.stringify unchanged (whitespace, non-canonical numbers, duplicate or integer-like keys), or entries
 * without a string id and a boolean flag. Unknown fields are validated as JSON and skipped.
 */
import { isUtf8 } from 'node:buffer';
import { DECLINE, FieldTable, JsonBytes, Spans, decline } from './json-bytes.js';

// Known top-level fields: id = index + 1. A second occurrence declines (JSON.parse would keep the last).
const FIELDS = new FieldTable([
  'trace_id', 'agent_id', 'tenant', 'blueprint', 'intervention', 'approved', 'stage', 'halted', 'severity', 'reasons',
  'tripwires', 'rules', 'latency_ms', 'event_time_ms', 'decided_at_ms', 'hook', 'tool', 'session_id', 'engine_version',
  'fallback', 'timestamp', 'blueprint_version', 'rollout_arm', 'event_id',
] as const);
export const F = FIELDS.id;
const REQUIRED = [F.trace_id, F.agent_id, F.intervention];
const ID_NAME = Buffer.from('id', 'latin1');
const FIRED_NAME = Buffer.from('fired', 'latin1');
const PASSED_NAME = Buffer.from('passed', 'latin1');

// Scanner state: a scan is synchronous, so one module-level cursor and span table serve every call; the
// result stays valid until the next scanDecision().
/** The cursor; `J.src` holds the bytes of the record scanned last. */
export const J = new JsonBytes();
/** Per field id: value span (string content without quotes, number text, whole list), or -1 when absent. */
export const START = new Int32Array(FIELDS.size);
export const END = new Int32Array(FIELDS.size);
/** Per field id: 1/0 for the booleans approved, halted, fallback. */
export const BOOL = new Uint8Array(FIELDS.size);
/** Per field id: the numbers, as decisionRow reads them (epoch ms non-negative and truncated). */
export const NUM = new Float64Array(FIELDS.size);
/** Per field id: 1 when an epoch-ms text is digits only (≤ 15: exact), so its bytes print as String(NUM) does. */
export const PLAIN = new Uint8Array(FIELDS.size);
/** Spans of the reasons, the fired tripwire ids and the failed rule ids. */
export const REASONS = new Spans();
export const FIRED = new Spans();
export const FAILED = new Spans();

/**
 * A list of `{id, <flag>, …}` outcomes in exact form (its text is the row's JSON column). Pushes the id of
 * every entry whose flag equals `want`. The ledger draft reads the flag by truthiness and the row by
 * identity: with booleans they agree, so the flag must be a boolean (or, when not required, absent).
 * The list's parameters and the entry being read live in `O` (handlers allocated once, not per record).
 */
const O = { flag: new Uint8Array(0) as Uint8Array, want: 0, flagRequired: false, ids: FIRED, idFrom: -1, idEnd: -1, value: -1 };

const onOutcomeKey = (k: number, kEnd: number): void => {
  if (J.sameName(k, kEnd, ID_NAME)) {
    O.idFrom = J.str();
    O.idEnd = J.strEnd;
  } else if (J.sameName(k, kEnd, O.flag)) O.value = J.bool();
  else J.skip(2, true);
};

const onOutcome = (): void => {
  O.idFrom = -1;
  O.value = -1;
  J.exactObject(onOutcomeKey);
  if (O.idFrom < 0 || (O.value < 0 && O.flagRequired)) decline();
  if (O.value === O.want) O.ids.push(O.idFrom, O.idEnd);
};

function outcomes(flag: Uint8Array, want: number, flagRequired: boolean, ids: Spans): void {
  O.flag = flag;
  O.want = want;
  O.flagRequired = flagRequired;
  O.ids = ids;
  J.exactArray(onOutcome);
}

/** One known field's value (a module function, not a closure: nothing allocated per record). */
function onField(id: number): void {
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
    case F.latency_ms: {
      const v = Number(J.src.toString('latin1', J.number(), J.i));
      if (!Number.isFinite(v)) decline();
      NUM[id] = v;
      break;
    }
    case F.event_time_ms:
    case F.decided_at_ms:
      NUM[id] = J.epochMs(J.number(), J.i);
      PLAIN[id] = J.plain ? 1 : 0;
      break;
    case F.timestamp:
      J.skip(1, false); // only read when a time field is missing (declined below)
      break;
    default:
      START[id] = J.str(); // the string fields
      END[id] = J.strEnd;
  }
}

/** Scans the whole record into START/END/BOOL and the span lists; declines by throwing DECLINE. */
function scan(): void {
  START.fill(-1);
  REASONS.length = 0;
  FIRED.length = 0;
  FAILED.length = 0;
  J.record(FIELDS, START, END, onField);
  for (const id of REQUIRED) JsonBytes.required(START, END, id);
  if (START[F.event_time_ms] < 0) decline();
  if (START[F.decided_at_ms] < 0 && START[F.timestamp] >= 0) decline();
}

/** Scans one record into the span tables (J.src keeps its bytes until the next call); true when it is in the plain form. */
export function scanDecision(value: Buffer): boolean {
  if (!isUtf8(value)) return false;
  J.reset(value);
  try {
    scan();
    return true;
  } catch (e) {
    if (e === DECLINE) return false;
    throw e;
  }
}
