/**
 * Dead-letter records: the ORIGINAL key, value and headers, plus why and where from, so a record can be
 * inspected and replayed byte for byte. The stage keeps running after dead-lettering.
 */
import type { InMessage, OutMessage } from './client.js';
import { headerText } from './client.js';

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

const MAX_MESSAGE_HEADER = 1000;

export function dlqMessage(m: InMessage, err: { code: string; message: string }, stage: string, nowMs: number): OutMessage {
  // Every original header, a repeated key with all its values in order: the record must replay byte for byte.
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
