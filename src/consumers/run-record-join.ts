/**
 * The sink's join of a run event's two replay-record halves (docs/acm.md "In the stream", contracts C12): the
 * tripwire stage's pending record and the scorer's answer, both on acgp.ledger keyed by agent_id, so the answer
 * normally follows its pending record on the same partition — in the same batch, or in a later one. A half whose
 * other half is not there yet waits in memory and in `acm_run_records` (kinds `pending`/`answer`, written with the
 * batch, so a restart or another sink instance finds it); the other half, when it comes, completes the event.
 * Either order works: an answer that overtook its pending record (a partially failed send, retried) waits the same way.
 *
 * Joins run one at a time in call order (the sink calls `join` before its first await per batch): an overlapping
 * later batch cannot miss a half the earlier batch is still putting aside.
 */
import { createHash } from 'node:crypto';
import type { InMessage } from '../adapters/kafka/client.js';
import type { AcmRunRecordRow } from '../adapters/clickhouse/tables.js';
import { completeRunEvent, type CompletedRunEvent, type PendingRunEvent, type RunEventAnswer } from '../engine/acm/bundle/stream-record.js';
import { StewardError } from '../errors.js';

export type RunRecordPart = PendingRunEvent | RunEventAnswer;

export interface RunPartKey {
  tenant: string;
  run_id: string;
  trace_id: string;
  event_id: string;
}

/** Reads staged halves of these events (acm_run_records kinds pending/answer); may return more, never fewer. */
export type StagedRunParts = (keys: RunPartKey[]) => Promise<RunRecordPart[]>;

export interface JoinedRunEvent {
  pending: PendingRunEvent;
  completed: CompletedRunEvent;
  /** The input the event's rows are attributed to (its half in this batch). */
  source: InMessage;
}

export interface RunJoinOutcome {
  joined: JoinedRunEvent[];
  /** Halves put aside until their other half arrives. */
  staged: { row: AcmRunRecordRow; source: InMessage }[];
}

const keyOf = (p: RunPartKey): string => JSON.stringify([p.tenant, p.run_id, p.event_id]);

/** An acgp.ledger record that is a run-record half (`run_record: pending|answer`), checked; undefined for any other record. */
export function runRecordPart(v: unknown): RunRecordPart | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (o.run_record === undefined) return undefined;
  const bad = (what: string): never => {
    throw new StewardError('STEWARD_SINK_RECORD', `run record: ${what}`);
  };
  if (o.run_record !== 'pending' && o.run_record !== 'answer') bad(`unknown run_record ${JSON.stringify(o.run_record)}`);
  for (const k of ['tenant', 'run_id', 'agent_id', 'trace_id', 'event_id'] as const) if (typeof o[k] !== 'string') bad(`${k} must be a string`);
  if (o.run_id === '' || o.event_id === '') bad('run_id and event_id must not be empty');
  if (o.run_record === 'pending') {
    if (!Number.isSafeInteger(o.seq) || (o.seq as number) < 1) bad('seq must be a positive integer');
    if (typeof o.line !== 'string' || typeof o.request !== 'object' || o.request === null || typeof o.checks !== 'object' || o.checks === null) bad('line, request and checks are required');
    if (!Array.isArray(o.contexts) || !Array.isArray(o.drafts)) bad('contexts and drafts must be arrays');
  } else {
    if (typeof o.intervention !== 'string' || typeof o.stage !== 'string' || !Array.isArray(o.metrics) || typeof o.verdict !== 'object' || o.verdict === null) bad('intervention, stage, metrics and verdict are required');
  }
  return o as unknown as RunRecordPart;
}

/** The seq of a staged answer row: from its event id (an answer does not know the event's place in the run). */
function answerSeq(eventId: string): number {
  return parseInt(createHash('sha256').update(eventId).digest('hex').slice(0, 13), 16);
}

export class RunRecordJoin {
  /** Halves waiting for their other half, by event (oldest first; bounded, the rest waits in ClickHouse only). */
  private readonly waiting = new Map<string, RunRecordPart>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly staged: StagedRunParts,
    private readonly o: { nowMs: () => number; maxWaiting?: number },
  ) {}

  join(parts: { part: RunRecordPart; source: InMessage }[]): Promise<RunJoinOutcome> {
    const run = this.queue.then(() => this.joinNow(parts));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async joinNow(parts: { part: RunRecordPart; source: InMessage }[]): Promise<RunJoinOutcome> {
    type Half<T> = { part: T; source?: InMessage; at: number };
    const slots = new Map<string, { key: RunPartKey; p?: Half<PendingRunEvent>; a?: Half<RunEventAnswer> }>();
    const fill = (part: RunRecordPart, source?: InMessage, at = -1) => {
      const k = keyOf(part);
      let s = slots.get(k);
      if (!s) {
        s = { key: { tenant: part.tenant, run_id: part.run_id, trace_id: part.trace_id, event_id: part.event_id } };
        slots.set(k, s);
      }
      if (part.run_record === 'pending') {
        if (s.p) return;
        s.p = { part, source, at };
      } else if (!s.a) s.a = { part, source, at };
    };
    parts.forEach(({ part, source }, i) => fill(part, source, i));
    const gaps = () => [...slots.entries()].filter(([, s]) => !s.p || !s.a);
    for (const [k] of gaps()) {
      const w = this.waiting.get(k);
      if (w) fill(w);
    }
    const missing = gaps();
    if (missing.length > 0) for (const part of await this.staged(missing.map(([, s]) => s.key))) if (slots.has(keyOf(part))) fill(part);
    const out: RunJoinOutcome = { joined: [], staged: [] };
    const now = this.o.nowMs();
    // Joined in the order their second half arrived: one agent's answers come in its events' order (the scorer
    // answers a key's records in order), so each run chain gets its events in order, also when a batch starts
    // between an event's pending record and its answer.
    const done: { at: number; j: JoinedRunEvent }[] = [];
    for (const [k, s] of slots) {
      const source = (s.p?.source ?? s.a?.source)!;
      if (s.p && s.a) {
        this.waiting.delete(k);
        done.push({ at: Math.max(s.p.at, s.a.at), j: { pending: s.p.part, completed: completeRunEvent(s.p.part, s.a.part), source } });
        continue;
      }
      const part = (s.p ?? s.a)!.part;
      this.wait(k, part);
      const base = { tenant: part.tenant, run_id: part.run_id, agent_id: part.agent_id, trace_id: part.trace_id, line: JSON.stringify(part), ingested_at_ms: now };
      out.staged.push({ row: part.run_record === 'pending' ? { ...base, kind: 'pending', seq: part.seq, ts_ms: part.now_ms } : { ...base, kind: 'answer', seq: answerSeq(part.event_id), ts_ms: now }, source });
    }
    out.joined = done.sort((x, y) => x.at - y.at).map((d) => d.j);
    return out;
  }

  private wait(k: string, part: RunRecordPart): void {
    this.waiting.delete(k);
    this.waiting.set(k, part);
    const max = this.o.maxWaiting ?? 100_000;
    if (this.waiting.size > max) this.waiting.delete(this.waiting.keys().next().value as string);
  }
}

/** The acm_run_records rows of a completed event: its trace, request and response (seq: its place), its context versions. */
export function runEventRows(j: JoinedRunEvent, ingestedAtMs: number): AcmRunRecordRow[] {
  const p = j.pending;
  const base = { tenant: p.tenant, run_id: p.run_id, agent_id: p.agent_id, trace_id: p.trace_id, ts_ms: p.now_ms, ingested_at_ms: ingestedAtMs };
  const rows: AcmRunRecordRow[] = [
    { ...base, kind: 'trace', seq: p.seq, line: p.line },
    { ...base, kind: 'request', seq: p.seq, line: JSON.stringify(j.completed.request) },
    { ...base, kind: 'response', seq: p.seq, line: JSON.stringify(j.completed.response) },
  ];
  // Context rows in event order (the exporter keeps each version's first row); room for 1000 versions per event.
  p.contexts.forEach((c, i) => rows.push({ ...base, kind: 'context', seq: p.seq * 1000 + i, trace_id: c.trace_id ?? '', line: JSON.stringify(c) }));
  return rows;
}
