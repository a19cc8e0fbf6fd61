// patches/kafkajs+2.2.4.patch (applied by `npm ci` through patch-package): kafkajs grouped a send's messages per
// partition by copying the partition's array for every message (O(n²) in a send of n messages), zero-filled every
// encoder buffer (512 bytes a record and a header) and grew a record's buffer past 512 bytes by copying; it also
// allocated an array and a Buffer per varint, Long objects per timestamp delta, an Encoder per header, and computed
// CRC-32C a byte at a time (now slicing-by-8). Every case below checks the bytes against a reference written here.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const file = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
const group = require(file) as (a: { topic: string; partitionMetadata: unknown[]; messages: { key: string; i: number }[]; partitioner: (a: { message: { key: string } }) => number }) => Record<string, { i: number }[]>;

const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: { offsetDelta?: number; timestampDelta?: number; key: Buffer | string | null; value: Buffer | string | null; headers?: Record<string, string | Buffer | (string | Buffer)[]> }) => { buffer: Buffer };
const crc32C = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;
type Enc = { writeVarLong(v: number | bigint): Enc; writeVarInt(v: number): Enc; buffer: Buffer };
const Encoder = require('kafkajs/src/protocol/encoder.js') as { new (): Enc; sizeOfVarLong(v: number): number };

/** Reference CRC-32C (Castagnoli, reflected 0x82F63B78), bit by bit. */
function refCrc32C(b: Buffer): number {
  let crc = ~0;
  for (const byte of b) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}
/** Reference zigzag LEB128 varint/varlong (Kafka's record fields). */
function refVarLong(v: number | bigint): Buffer {
  const n = BigInt(v);
  let z = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return Buffer.from(out);
}
const bytes = (v: Buffer | string | null) => (v === null ? Buffer.concat([refVarLong(-1)]) : Buffer.concat([refVarLong(Buffer.byteLength(v)), Buffer.from(v)]));

describe('kafkajs encoder (patched)', () => {
  it('is the patched version (no zero fill; a record sized up front; varints and headers in place; slicing-by-8 CRC)', () => {
    const encoder = readFileSync(require.resolve('kafkajs/src/protocol/encoder.js'), 'utf8');
    expect(encoder).toContain('Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize))');
    expect(encoder).not.toContain('this.writeBufferInternal(Buffer.from(byteArray))\n    return this\n  }\n\n  writeVarLong');
    const record = readFileSync(require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js'), 'utf8');
    expect(record).toContain('new Encoder(sizeOfBody + Encoder.sizeOfVarInt(sizeOfBody))');
    expect(record).not.toContain('headersArray.map(Header)');
    expect(readFileSync(require.resolve('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js'), 'utf8')).toContain('Slicing-by-8');
    expect(readFileSync(require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js'), 'utf8')).not.toContain('...message,');
  });

  it('a produce request carries each message as its record (key, value, headers; other properties ignored), CRC over the batch', async () => {
    type Req = (a: object) => { encode(): Promise<{ buffer: Buffer }> };
    const ProduceV3 = require('kafkajs/src/protocol/requests/produce/v3/request.js') as Req;
    const Long = require('kafkajs/src/utils/long.js') as { fromNumber(n: number): unknown };
    const messages = [
      { key: 'agent-1', value: 'x'.repeat(600), partition: 2, timestamp: 1_732_700_000_100, headers: { 'x-steward-trace-offset': '7' } },
      { key: null, value: Buffer.from('y'), partition: 2, timestamp: 1_732_700_000_050, extra: 'not encoded' },
    ];
    const req = await ProduceV3({ acks: -1, timeout: 30_000, producerId: Long.fromNumber(5), producerEpoch: 1, topicData: [{ topic: 't', partitions: [{ partition: 2, firstSequence: 9, messages }] }] }).encode();
    // kafkajs sorts timestamps as strings; both have 13 digits, so the first timestamp is the smaller.
    const records = Buffer.concat([
      Record({ key: 'agent-1', value: 'x'.repeat(600), headers: { 'x-steward-trace-offset': '7' }, offsetDelta: 0, timestampDelta: 50 }).buffer,
      Record({ key: null, value: Buffer.from('y'), offsetDelta: 1, timestampDelta: 0 }).buffer,
    ]);
    const buf = req.buffer;
    expect(buf.subarray(buf.length - records.length)).toEqual(records);
    // The batch: ... magic (1) CRC (4) then attributes .. records; the CRC covers attributes through the end.
    const crcAt = buf.length - records.length - (2 + 4 + 8 + 8 + 8 + 2 + 4 + 4) - 4;
    expect(buf.readUInt32BE(crcAt)).toBe(refCrc32C(buf.subarray(crcAt + 4)));
  });

  it('computes CRC-32C as the bitwise reference does, at every length and alignment', () => {
    expect(crc32C(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32C(Buffer.alloc(0))).toBe(0);
    const big = randomBytes(70_000);
    for (let n = 0; n < 300; n++) {
      const start = n % 13;
      const b = big.subarray(start, start + ((n * 37) % 2100));
      expect(crc32C(b)).toBe(refCrc32C(b));
    }
    expect(crc32C(big)).toBe(refCrc32C(big));
  });

  it('encodes varlongs (timestamp deltas) as zigzag LEB128, small, negative and past 32 bits', () => {
    for (const v of [0, 1, -1, 63, 64, -64, -65, 8191, 8192, 2 ** 30 - 1, -(2 ** 30), 2 ** 30, -(2 ** 30) - 1, 2 ** 31, -(2 ** 31), 2 ** 40 + 3, -1_732_700_000_000]) {
      expect(new Encoder().writeVarLong(v).buffer).toEqual(refVarLong(v));
      expect(Encoder.sizeOfVarLong(v)).toBe(refVarLong(v).length);
    }
    for (const v of [0, -1, 300, -300, 2 ** 29, -(2 ** 31)]) expect(new Encoder().writeVarInt(v).buffer).toEqual(refVarLong(v));
  });

  it('encodes a record with several headers (a repeated one), a null key and a negative timestamp delta', () => {
    const value = 'dé'.repeat(300);
    const headers = { 'x-steward-trace-partition': '2', 'x-steward-trace-offset': Buffer.from('12345'), 'x-r': ['a', Buffer.from('bc')] };
    const r = Record({ offsetDelta: 70, timestampDelta: -5, key: null, value, headers });
    const hs: [string, string | Buffer][] = [['x-steward-trace-partition', '2'], ['x-steward-trace-offset', Buffer.from('12345')], ['x-r', 'a'], ['x-r', Buffer.from('bc')]];
    const body = Buffer.concat([Buffer.from([0]), refVarLong(-5), refVarLong(70), bytes(null), bytes(value), refVarLong(hs.length), ...hs.flatMap(([k, v]) => [bytes(k), bytes(v)])]);
    expect(r.buffer).toEqual(Buffer.concat([refVarLong(body.length), body]));
  });

  it('still encodes a record over 512 bytes byte for byte as Kafka lays it out', () => {
    const value = Buffer.from('v'.repeat(900));
    const r = Record({ offsetDelta: 3, timestampDelta: 0, key: Buffer.from('k'), value, headers: { h: 'x' } });
    // length varint, attributes 0, timestamp delta 0, offset delta 3 (zigzag 6), key (len 1 → 2, 'k'), value (len 900 → 1800 as varint), 1 header.
    const body = Buffer.concat([Buffer.from([0, 0, 6, 2]), Buffer.from('k'), Buffer.from([0x88, 0x0e]), value, Buffer.from([2, 2]), Buffer.from('h'), Buffer.from([2]), Buffer.from('x')]);
    const len = body.length; // 913: varint 913 zigzag = 1826 → 0xa2 0x0e
    expect(r.buffer).toEqual(Buffer.concat([Buffer.from([((len * 2) & 0x7f) | 0x80, (len * 2) >> 7]), body]));
  });
});

describe('kafkajs groupMessagesPerPartition (patched)', () => {
  it('is the patched, append-in-place version', () => {
    const src = readFileSync(file, 'utf8');
    expect(src).toContain('current.push(message)');
    expect(src).not.toContain('[...current, message]');
  });

  it('keeps each partition’s messages in send order, every message once', () => {
    const messages = Array.from({ length: 3000 }, (_, i) => ({ key: `a${i % 7}`, i }));
    const out = group({ topic: 't', partitionMetadata: [{}, {}, {}], messages, partitioner: ({ message }) => Number(message.key.slice(1)) % 3 });
    expect(Object.keys(out).sort()).toEqual(['0', '1', '2']);
    for (const [p, ms] of Object.entries(out)) {
      expect(ms.every((m) => (m.i % 7) % 3 === Number(p))).toBe(true);
      expect(ms.map((m) => m.i)).toEqual([...ms.map((m) => m.i)].sort((a, b) => a - b));
    }
    expect(Object.values(out).reduce((n, ms) => n + ms.length, 0)).toBe(3000);
    expect(group({ topic: 't', partitionMetadata: [], messages, partitioner: () => 0 })).toEqual({});
  });
});

// kafkajs #1556/#1704 (PR #1667): after any response, RequestQueue scheduled a check of its pending requests even
// with none pending, with a negative delay (throttledUntil starts at -1), i.e. 1 ms — and the check scheduled the
// next one: every connection polled its empty queue a thousand times a second for the life of the process.
describe('kafkajs RequestQueue (patched)', () => {
  type Queue = {
    push(r: { entry: { correlationId: number; resolve(): void; reject(): void }; expectResponse: boolean; sendRequest: () => void }): void;
    fulfillRequest(r: { correlationId: number; payload: Buffer; size: number }): void;
    maybeThrottle(ms: number): void;
    checkPendingRequests(): void;
    destroy(): void;
    throttleCheckTimeoutId: unknown;
    pending: unknown[];
  };
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (o: object) => Queue;
  const logger = { debug() {}, info() {}, warn() {}, error() {} };
  const queue = (maxInFlightRequests?: number) => new RequestQueue({ maxInFlightRequests, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 't', broker: 'b:9092', logger });
  const sent: number[] = [];
  const req = (correlationId: number) => ({ entry: { correlationId, resolve() {}, reject() {} }, expectResponse: true, sendRequest: () => void sent.push(correlationId) });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('schedules no check of an empty queue after a response: an idle connection does not poll', async () => {
    const q = queue();
    let checks = 0;
    const check = q.checkPendingRequests.bind(q);
    q.checkPendingRequests = () => {
      checks++;
      check();
    };
    q.push(req(1));
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(q.throttleCheckTimeoutId).toBeNull();
    await sleep(40);
    // Unpatched: one check from the response, then one a millisecond (~40 here).
    expect(checks).toBe(1);
    q.destroy();
  });

  it('still sends a request held by the in-flight limit when one answers, and one held by a throttle when it ends', async () => {
    sent.length = 0;
    const q = queue(1);
    q.push(req(1));
    q.push(req(2));
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(sent).toEqual([1, 2]);
    q.fulfillRequest({ correlationId: 2, payload: Buffer.alloc(0), size: 0 });
    q.maybeThrottle(30);
    q.push(req(3));
    expect(sent).toEqual([1, 2]);
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    await sleep(80);
    expect(sent).toEqual([1, 2, 3]);
    expect(q.pending).toHaveLength(0);
    q.destroy();
  });
});
