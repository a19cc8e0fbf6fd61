import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isTimestamp, parseTimestamp } from '../../../src/engine/time.js';

const utc = (s: string) => new Date(s).getTime();

describe('parseTimestamp (trace timestamps, ISO-8601)', () => {
  it.each([
    ['2025-03-01T09:00:00Z', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01T09:00:00.123Z', '2025-03-01T09:00:00.123Z'],
    // No offset: UTC, not the steward host's local time (what Date.parse would do).
    ['2025-03-01T09:00:00', '2025-03-01T09:00:00.000Z'],
    // Python datetime.isoformat(): microseconds, truncated to milliseconds.
    ['2025-03-01T09:00:00.123456', '2025-03-01T09:00:00.123Z'],
    ['2025-03-01T09:00:00.123456+00:00', '2025-03-01T09:00:00.123Z'],
    ['2025-03-01T09:00Z', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01 09:00:00', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01t09:00:00z', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01T09:00:00,5Z', '2025-03-01T09:00:00.500Z'],
    ['2025-03-01T10:30:00+01:30', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01T04:00:00-0500', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01T11:00:00+02', '2025-03-01T09:00:00.000Z'],
    ['2025-03-01', '2025-03-01T00:00:00.000Z'],
    ['2025-03-01T24:00:00Z', '2025-03-02T00:00:00.000Z'],
    ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
    ['2016-12-31T23:59:60Z', '2016-12-31T23:59:59.999Z'],
    // Years 0–99 are those years (Date.UTC alone would make them 1900–1999); 100 on takes the Date.UTC path.
    ['0050-06-01T12:00:00Z', '0050-06-01T12:00:00.000Z'],
    ['0000-01-01', '0000-01-01T00:00:00.000Z'],
    ['0099-12-31T23:59:59+01:00', '0099-12-31T22:59:59.000Z'],
    ['0100-03-01T00:00:00Z', '0100-03-01T00:00:00.000Z'],
  ])('%s → %s', (input, iso) => {
    expect(parseTimestamp(input)).toBe(utc(iso));
    expect(isTimestamp(input)).toBe(true);
  });

  it.each([
    '',
    'yesterday',
    '1700000000000',
    '2025-3-1T09:00:00Z',
    '2025-03-01T9:00:00Z',
    '2025-13-01T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2025-04-31T00:00:00Z',
    '2025-03-01T25:00:00Z',
    '2025-03-01T24:00:01Z',
    '2025-03-01T09:60:00Z',
    '2025-03-01T09:00:61Z',
    '2025-03-01T09:00:00+24:00',
    '2025-03-01T09:00:00 Z',
    '2025-03-01T09:00:00Z ',
    'Sat, 01 Mar 2025 09:00:00 GMT',
  ])('rejects %j', (input) => {
    expect(parseTimestamp(input)).toBeNaN();
    expect(isTimestamp(input)).toBe(false);
  });

  it('agrees with Date.parse on every RFC 3339 timestamp with an offset', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9998-12-31T23:59:59Z'), noInvalidDate: true }), fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }), (d, off) => {
        const local = new Date(d.getTime() + off * 60_000).toISOString().slice(0, 23);
        const sign = off < 0 ? '-' : '+';
        const a = Math.abs(off);
        const text = `${local}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
        expect(parseTimestamp(text)).toBe(d.getTime());
        expect(parseTimestamp(text)).toBe(Date.parse(text));
      }),
    );
  });
});
