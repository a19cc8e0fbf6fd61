/**
 * What the stages need to know about records: their size on the wire against the output limit (and a DLQ record
 * cut to fit it), their key, the event time a trace claims, clamped to the broker's clock, and outputs grouped by
 * topic for one request.
 */
import type { InMessage, OutMessage, OutRecord } from '../adapters/kafka/client.js';
import { dlqMessage, DLQ_DROPPED_HEADER } from '../adapters/kafka/dlq.js';
import { parseTimestamp } from '../engine/time.js';
import type { StageOutput } from './stage-types.js';

/** Bytes a record puts on the wire besides framing: key + value + header names and values. */
export function messageBytes(m: OutMessage, utf8 = (s: string) => Buffer.byteLength(s)): number {
  const len = (v: string | Buffer | null | undefined) => (v === null || v === undefined ? 0 : typeof v === 'string' ? utf8(v) : v.length);
  let n = len(m.key) + len(m.value);
  if (m.headers) {
    for (const k in m.headers) {
      const v = m.headers[k];
      if (Array.isArray(v)) for (const one of v) n += utf8(k) + len(one);
      else n += utf8(k) + len(v);
    }
  }
  return n;
}

/**
 * Whether `m` fits in `limit` bytes. Checked on every output of the hot path: a string's UTF-8 size is at
 * most 3 bytes per UTF-16 unit, so the exact count (a scan of the whole value) runs only near the limit.
 */
export function fitsIn(m: OutMessage, limit: number): boolean {
  return messageBytes(m, (s) => s.length * 3) <= limit || messageBytes(m) <= limit;
}

/** Partition key as text (agent_id everywhere). */
export function keyText(m: InMessage): string | null {
  return m.key === null ? null : m.key.toString('utf8');
}

/**
 * Event time of a trace (its ISO timestamp) with the Kafka timestamp as fallback. With `maxSkewMs` the
 * agent's claim is clamped to within that distance of the record timestamp: an agent must not reset its
 * own rate-limit windows or age its trust debt away by writing a timestamp days ahead.
 */
export function eventTimeMs(timestamp: unknown, m: InMessage, maxSkewMs: number | null = null): number {
  const t = typeof timestamp === 'string' ? parseTimestamp(timestamp) : typeof timestamp === 'number' ? timestamp : NaN;
  if (!Number.isFinite(t)) return m.timestampMs;
  if (maxSkewMs === null || !Number.isFinite(m.timestampMs)) return t;
  return Math.min(Math.max(t, m.timestampMs - maxSkewMs), m.timestampMs + maxSkewMs);
}

/** The DLQ record of `m` cut to `limit` bytes: first without the original value, then without its headers. */
export function fittedDlqMessage(m: InMessage, err: { code: string; message: string }, stage: string, nowMs: number, limit: number): OutMessage {
  let rec = dlqMessage(m, err, stage, nowMs);
  if (fitsIn(rec, limit)) return rec;
  const valueBytes = m.value?.length ?? 0;
  const noValue = dlqMessage({ ...m, value: null }, err, stage, nowMs);
  rec = { ...noValue, headers: { ...noValue.headers, [DLQ_DROPPED_HEADER]: `value (${valueBytes} bytes)` } };
  if (fitsIn(rec, limit)) return rec;
  const bare = dlqMessage({ ...m, value: null, headers: {}, repeatedHeaders: undefined, key: m.key && m.key.length <= 1024 ? m.key : null }, err, stage, nowMs);
  return { ...bare, headers: { ...bare.headers, [DLQ_DROPPED_HEADER]: `value (${valueBytes} bytes), original headers and key` } };
}

/** Stage outputs grouped into one record list per topic, in order (one produce request). */
export function toRecords(outs: StageOutput[]): OutRecord[] {
  const byTopic = new Map<string, OutMessage[]>();
  for (const o of outs) {
    const list = byTopic.get(o.topic);
    if (list) list.push(o.message);
    else byTopic.set(o.topic, [o.message]);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}
