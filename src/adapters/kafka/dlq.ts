/**
 * Dead-letter records: the ORIGINAL key and value bytes and every header value, plus why and where from, so a
 * record can be inspected and replayed (`steward dlq replay`). Header order is kept per key, not across keys
 * (kafkajs hands headers over as an object). The stage keeps running after dead-lettering.
 */
import type { InMessage, OutMessage } from './client.js';
import { headerText, putHeader } from './client.js';
import { INGEST_KEY_HEADER } from './headers.js';

export const DLQ_HEADERS = {
  code: 'x-steward-error-code',
  message: 'x-steward-error-message',
  topic: 'x-steward-source-topic',
  partition: 'x-steward-source-partition',
  offset: 'x-steward-source-offset',
  timestamp: 'x-steward-source-timestamp',
  failedAt: 'x-steward-failed-at',
  stage: 'x-steward-stage',
} as const;

/** Headers added to a DLQ record whose original value or headers had to be left out to fit the limit. */
export const DLQ_DROPPED_HEADER = 'x-steward-dropped';
/** Set on a record `steward dlq replay` published again: the DLQ record it came from (topic/partition/offset). */
export const REPLAYED_FROM_HEADER = 'x-steward-replayed-from';

const MAX_MESSAGE_HEADER = 1000;
const DLQ_ONLY = new Set<string>([...Object.values(DLQ_HEADERS), DLQ_DROPPED_HEADER]);
/**
 * Not carried into a replay: the original's idempotency key (D52) would make the tripwire stage drop the replay as a
 * later copy of the very record that was dead-lettered (its mark names that record).
 */
const NOT_REPLAYED = new Set<string>([...DLQ_ONLY, INGEST_KEY_HEADER]);

export function dlqMessage(m: InMessage, err: { code: string; message: string }, stage: string, nowMs: number): OutMessage {
  // Every original header, a repeated key with all its values in order (a replay must carry them all).
  const headers: NonNullable<OutMessage['headers']> = m.repeatedHeaders ? { ...m.headers, ...m.repeatedHeaders } : { ...m.headers };
  headers[DLQ_HEADERS.code] = err.code;
  headers[DLQ_HEADERS.message] = err.message.length > MAX_MESSAGE_HEADER ? err.message.slice(0, MAX_MESSAGE_HEADER) + '…' : err.message;
  headers[DLQ_HEADERS.topic] = m.topic;
  headers[DLQ_HEADERS.partition] = String(m.partition);
  headers[DLQ_HEADERS.offset] = m.offset;
  headers[DLQ_HEADERS.timestamp] = String(m.timestampMs);
  headers[DLQ_HEADERS.failedAt] = String(nowMs);
  headers[DLQ_HEADERS.stage] = stage;
  // Same partition key as the source so one agent's failures stay ordered too.
  return { key: m.key, value: m.value, headers, timestamp: String(m.timestampMs) };
}

export interface DlqRecordView {
  code?: string;
  message?: string;
  sourceTopic?: string;
  sourcePartition?: number;
  sourceOffset?: string;
  stage?: string;
}

export function readDlqHeaders(m: InMessage): DlqRecordView {
  const p = headerText(m, DLQ_HEADERS.partition);
  return {
    code: headerText(m, DLQ_HEADERS.code),
    message: headerText(m, DLQ_HEADERS.message),
    sourceTopic: headerText(m, DLQ_HEADERS.topic),
    sourcePartition: p === undefined ? undefined : Number(p),
    sourceOffset: headerText(m, DLQ_HEADERS.offset),
    stage: headerText(m, DLQ_HEADERS.stage),
  };
}

export type ReplayPlan = { ok: true; topic: string; message: OutMessage } | { ok: false; reason: string };

/**
 * What `steward dlq replay` publishes for a DLQ record: only traces the tripwire stage dead-lettered, back to the
 * traces topic with their original key, value and headers (repeated keys with all their values), the DLQ's own
 * headers and the idempotency key (D52) removed and REPLAYED_FROM_HEADER added. That topic feeds the tripwire stage alone and takes any agent's
 * traces anyway, so a DLQ record forged by whoever can write the DLQ gains nothing there, and the same bytes give
 * the same idempotency id (rate-limit hits and trust debt are not counted twice). Everything else is refused: a
 * scoring message carries a decision the scorer trusts as is, and the topics the trust-debt stage and the sink
 * read have other consumers a replay would feed twice.
 */
export function replayOf(m: InMessage, tracesTopic: string): ReplayPlan {
  const source = headerText(m, DLQ_HEADERS.topic);
  const stage = headerText(m, DLQ_HEADERS.stage);
  if (source === undefined || stage === undefined) return { ok: false, reason: 'not a DLQ record: no source topic or stage header' };
  if (stage !== 'tripwire' || source !== tracesTopic) {
    return { ok: false, reason: `only traces the tripwire stage dead-lettered are replayed (this one: stage ${stage}, source ${source})` };
  }
  const dropped = headerText(m, DLQ_DROPPED_HEADER);
  if (dropped !== undefined) return { ok: false, reason: `the DLQ record left out the original ${dropped}` };
  const headers: NonNullable<OutMessage['headers']> = {};
  const repeated = m.repeatedHeaders;
  for (const k in m.headers) {
    if (!Object.hasOwn(m.headers, k) || NOT_REPLAYED.has(k)) continue;
    putHeader(headers, k, repeated && Object.hasOwn(repeated, k) ? repeated[k]! : m.headers[k]!);
  }
  headers[REPLAYED_FROM_HEADER] = `${m.topic}/${m.partition}/${m.offset}`;
  return { ok: true, topic: source, message: { key: m.key, value: m.value, headers } };
}
