// patches/kafkajs+2.2.4.patch (applied by `npm ci` through patch-package): kafkajs grouped a send's messages per
// partition by copying the partition's array for every message (O(n²) in a send of n messages), zero-filled every
// encoder buffer (512 bytes a record and a header) and grew a record's buffer past 512 bytes by copying.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const file = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
const group = require(file) as (a: { topic: string; partitionMetadata: unknown[]; messages: { key: string; i: number }[]; partitioner: (a: { message: { key: string } }) => number }) => Record<string, { i: number }[]>;

const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: { offsetDelta?: number; timestampDelta?: number; key: Buffer | null; value: Buffer; headers?: Record<string, string> }) => { buffer: Buffer };

describe('kafkajs encoder (patched)', () => {
  it('is the patched version (no zero fill; a record sized up front)', () => {
    expect(readFileSync(require.resolve('kafkajs/src/protocol/encoder.js'), 'utf8')).toContain('Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize))');
    expect(readFileSync(require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js'), 'utf8')).toContain('new Encoder(sizeOfBody + Encoder.sizeOfVarInt(sizeOfBody))');
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
