/**
 * DecisionTsvWriter: plain decision records (decision-scan.ts) to bytes without building objects or strings —
 * their TSV line (DECISION_COLUMNS order, tables.ts) appended to one insert body per batch, and their
 * POLICY_DECISION ledger draft as the JSON the acgp.ledger topic carries (entry id `pd:<event id>`). Both equal the reference path's
 * output byte for byte (`tsvEncoder(DECISION_COLUMNS)` of `decisionRow`, `JSON.stringify` of
 * `policyDecisionDraft` with the row's event time); the scanner's contract makes copying value bytes exact:
 * its strings hold no backslash, control character, quote or invalid UTF-8, so neither TSV nor JSON escapes
 * anything in them except `'` inside TSV array literals.
 */
import { BOOL, END, F, FAILED, FIRED, J, NUM, PLAIN, REASONS, START, scanDecision } from './decision-scan.js';
import { Growing, NL, TAB, approvedIntervention, ascii, flag, jsonList as jsonSpans, latin1 as bytes, lit, copy as copyFrom, tsvList as tsvSpans } from './tsv-bytes.js';
import type { Spans } from './json-bytes.js';
import { StewardError } from '../../errors.js';

const D0 = 48;
const EMPTY_LIST_TAB = bytes('[]\t');
const D_ENTRY = bytes('{"entry_id":"pd:');
const D_AGENT = bytes('","agent_id":"');
const D_TENANT = bytes('","tenant":"');
const D_TS = bytes('","ts_ms":');
const D_TRACE = bytes(',"type":"POLICY_DECISION","payload":{"trace_id":"');
const D_BLUEPRINT = bytes('","blueprint":"');
const D_ALLOW = bytes('","decision":"allow","intervention":"');
const D_DENY = bytes('","decision":"deny","intervention":"');
const D_STAGE = bytes('","stage":"');
const D_NONE = bytes('none');
const D_FIRED = bytes('","tripwires_fired":');
const D_FAILED = bytes(',"rules_failed":');
const D_REASONS = bytes(',"reasons":');
const D_ENGINE = bytes(',"engine_version":"');
const D_END_QUOTED = bytes('"}}');
const D_END = bytes('}}');
/** A draft's bytes besides its copied values: the literals, ts_ms (≤ 21 digits), `none`, list brackets. */
const DRAFT_FIXED = [D_ENTRY, D_AGENT, D_TENANT, D_TS, D_TRACE, D_BLUEPRINT, D_ALLOW, D_STAGE, D_NONE, D_FIRED, D_FAILED, D_REASONS, D_ENGINE, D_END_QUOTED].reduce((n, b) => n + b.length, 64);

/** One acgp.ledger record: a draft's JSON keyed by its agent. */
export interface LedgerDraftMessage {
  key: string;
  value: string | Buffer;
}

const copy = (out: Buffer, p: number, a: number, b: number): number => copyFrom(out, p, J.src, a, b);
const tsvList = (out: Buffer, p: number, spans: Spans): number => tsvSpans(out, p, J.src, spans);
const jsonList = (out: Buffer, p: number, spans: Spans): number => jsonSpans(out, p, J.src, spans);

/** A field's bytes (nothing when absent) and a tab. */
function field(out: Buffer, p: number, id: number): number {
  if (START[id] >= 0) p = copy(out, p, START[id], END[id]);
  out[p] = TAB;
  return p + 1;
}

/** An epoch-ms column: the digits as written when they are exact, else String() of the truncated value. */
function epoch(out: Buffer, p: number, id: number): number {
  return PLAIN[id] === 1 ? copy(out, p, START[id], END[id]) : ascii(out, p, String(NUM[id]));
}

function approved(): boolean {
  if (START[F.approved] >= 0) return BOOL[F.approved] === 1;
  return approvedIntervention(J, START[F.intervention], END[F.intervention]);
}

export class DecisionTsvWriter {
  private readonly tsv: Growing;
  private readonly drafts: Growing;
  private readonly ingested: string;

  /** `initialBytes`: room for the batch's lines (about its records' size); both buffers grow as needed. */
  constructor(ingestedAtMs: number, initialBytes = 1 << 16) {
    this.tsv = new Growing(initialBytes);
    this.drafts = new Growing(initialBytes);
    this.ingested = String(ingestedAtMs);
  }

  /**
   * Scans one record: when it is in the plain form, appends its TSV line and returns its ledger draft
   * message; otherwise returns undefined and appends nothing (the caller takes the reference path).
   */
  add(value: Buffer): { key: string; value: Buffer } | undefined {
    if (!scanDecision(value)) return undefined;
    // TSV: every input byte lands at most twice (an outcome id is in its list and in the JSON column), doubled
    // by escaping a quote at worst, plus the fixed fields (tabs, flags, numbers printed by String()) and a few
    // bytes per list element. Draft: the trace id twice, every other value once, plus DRAFT_FIXED and the list
    // elements' quotes. Typed arrays drop writes past their end, so the ends are checked before anything is
    // kept: a failed record leaves both buffers as they were.
    const elements = (REASONS.length + FIRED.length + FAILED.length) >> 1;
    const lineEnd = this.line(this.tsv.reserve(4 * J.n + 512 + 8 * elements));
    const draftFrom = this.drafts.len;
    const draftEnd = this.draft(this.drafts.reserve(2 * J.n + DRAFT_FIXED + 4 * elements));
    if (lineEnd > this.tsv.buf.length || draftEnd > this.drafts.buf.length) throw new StewardError('STEWARD_INTERNAL', 'decision writer ran past its reserved buffer');
    this.tsv.len = lineEnd;
    this.drafts.len = draftEnd;
    return { key: J.src.toString('utf8', START[F.agent_id], END[F.agent_id]), value: this.drafts.buf.subarray(draftFrom, draftEnd) };
  }

  /** The lines written (a view of the internal buffer). */
  bytes(): Buffer {
    return this.tsv.buf.subarray(0, this.tsv.len);
  }

  /** Writes the line at `tsv.len`; returns its end (the caller commits it). */
  private line(out: Buffer): number {
    let p = this.tsv.len;
    p = field(out, p, F.trace_id);
    p = field(out, p, F.agent_id);
    p = field(out, p, F.tenant);
    p = field(out, p, F.blueprint);
    p = field(out, p, F.intervention);
    p = flag(out, p, approved());
    p = field(out, p, F.stage);
    p = flag(out, p, START[F.halted] >= 0 && BOOL[F.halted] === 1);
    p = field(out, p, F.severity);
    p = tsvList(out, p, REASONS);
    out[p++] = TAB;
    p = tsvList(out, p, FIRED);
    out[p++] = TAB;
    p = tsvList(out, p, FAILED);
    out[p++] = TAB;
    p = START[F.tripwires] >= 0 ? field(out, p, F.tripwires) : lit(out, p, EMPTY_LIST_TAB);
    p = START[F.rules] >= 0 ? field(out, p, F.rules) : lit(out, p, EMPTY_LIST_TAB);
    if (START[F.latency_ms] >= 0) p = ascii(out, p, String(NUM[F.latency_ms]));
    else out[p++] = D0;
    out[p++] = TAB;
    p = epoch(out, p, F.event_time_ms);
    out[p++] = TAB;
    p = epoch(out, p, START[F.decided_at_ms] >= 0 ? F.decided_at_ms : F.event_time_ms);
    out[p++] = TAB;
    p = field(out, p, F.hook);
    p = field(out, p, F.tool);
    p = field(out, p, F.session_id);
    p = field(out, p, F.engine_version);
    p = flag(out, p, START[F.fallback] >= 0 && BOOL[F.fallback] === 1);
    p = field(out, p, F.blueprint_version);
    p = field(out, p, F.rollout_arm);
    p = ascii(out, p, this.ingested);
    out[p++] = NL;
    return p;
  }

  /** JSON.stringify(policyDecisionDraft(record)) with ts_ms = the row's event time, key order and all; returns its end. */
  private draft(out: Buffer): number {
    let p = this.drafts.len;
    p = lit(out, p, D_ENTRY);
    // policyDecisionEntryId: keyed by the event id when the decision names a non-empty one (spec-decisions D30).
    const key = START[F.event_id] >= 0 && END[F.event_id] > START[F.event_id] ? F.event_id : F.trace_id;
    p = copy(out, p, START[key], END[key]);
    p = lit(out, p, D_AGENT);
    p = copy(out, p, START[F.agent_id], END[F.agent_id]);
    p = lit(out, p, D_TENANT);
    if (START[F.tenant] >= 0) p = copy(out, p, START[F.tenant], END[F.tenant]);
    p = lit(out, p, D_TS);
    // Digits-only event times (≤ 15 digits) are safe integers that print as written.
    const ts = NUM[F.event_time_ms];
    if (PLAIN[F.event_time_ms] === 1) p = copy(out, p, START[F.event_time_ms], END[F.event_time_ms]);
    else p = ascii(out, p, Number.isSafeInteger(ts) ? String(ts) : '0');
    p = lit(out, p, D_TRACE);
    p = copy(out, p, START[F.trace_id], END[F.trace_id]);
    if (START[F.blueprint] >= 0) {
      p = lit(out, p, D_BLUEPRINT);
      p = copy(out, p, START[F.blueprint], END[F.blueprint]);
    }
    p = lit(out, p, approved() ? D_ALLOW : D_DENY);
    p = copy(out, p, START[F.intervention], END[F.intervention]);
    p = lit(out, p, D_STAGE);
    p = START[F.stage] >= 0 ? copy(out, p, START[F.stage], END[F.stage]) : lit(out, p, D_NONE);
    p = lit(out, p, D_FIRED);
    p = jsonList(out, p, FIRED);
    p = lit(out, p, D_FAILED);
    p = jsonList(out, p, FAILED);
    p = lit(out, p, D_REASONS);
    p = jsonList(out, p, REASONS);
    // policyDecisionDraft keeps engine_version only when it is non-empty.
    if (START[F.engine_version] >= 0 && END[F.engine_version] > START[F.engine_version]) {
      p = lit(out, p, D_ENGINE);
      p = copy(out, p, START[F.engine_version], END[F.engine_version]);
      p = lit(out, p, D_END_QUOTED);
    } else p = lit(out, p, D_END);
    return p;
  }
}
