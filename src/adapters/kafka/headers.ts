/**
 * Record headers between kafkajs' wire form and InMessage. Keys come from the wire, so none of them may reach an
 * object as anything but an own property (see putHeader).
 */
import type { InMessage } from './kafka-types.js';

/** kafkajs' IHeaders, structurally: this module stays free of kafkajs imports (client.ts is the only one). */
type WireHeaders = Record<string, string | Buffer | (string | Buffer | undefined)[] | undefined>;

/**
 * An event's idempotency key, written by the HTTP ingress with http.idempotency.dedupe 'pipeline': the tripwire stage
 * drops a later record of the same agent and key (docs/spec-decisions.md D52; src/adapters/redis/ingest-marks.ts).
 */
export const INGEST_KEY_HEADER = 'x-steward-idempotency-key';

const toBuf = (v: string | Buffer): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(String(v)));

/**
 * `o[k] = v` for a key from the wire: a header named `__proto__` must become an own property, not the
 * object's prototype (which would hand every later read the inherited members of whatever the value is).
 */
export function putHeader<T>(o: Record<string, T>, k: string, v: T): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

const isHeaderValue = (v: unknown): v is string | Buffer => typeof v === 'string' || Buffer.isBuffer(v);

/** Sets `m.headers` (and `m.repeatedHeaders` when a key repeats: kafkajs then gives an array) from kafkajs headers. */
export function setHeaders(m: InMessage, h: WireHeaders | undefined): InMessage {
  if (!h) return m;
  // for…in rather than Object.entries: no pair arrays per record (kafkajs headers are plain objects).
  for (const k in h) {
    const v = h[k];
    if (v === undefined || !Object.hasOwn(h, k)) continue;
    if (Array.isArray(v)) {
      // kafkajs merges headers with `obj[key] === undefined ? value : [obj[key], value]`, so a key named like an
      // Object.prototype member (constructor, __proto__) arrives as [that member, value]: drop what is not a value.
      const all = v.filter(isHeaderValue).map(toBuf);
      if (all.length === 0) continue;
      putHeader(m.headers, k, all[all.length - 1]!);
      if (all.length > 1) putHeader((m.repeatedHeaders ??= {}), k, all);
    } else if (isHeaderValue(v)) putHeader(m.headers, k, toBuf(v));
  }
  return m;
}

/** Header value as text (undefined when absent). */
export function headerText(m: InMessage, name: string): string | undefined {
  const v = Object.hasOwn(m.headers, name) ? m.headers[name] : undefined;
  return v === undefined ? undefined : v.toString('utf8');
}
