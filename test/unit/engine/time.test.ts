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

  it('reads the full date-time form by hand exactly as the regex reads it (the regex alone as the oracle)', () => {
    // The parser as it was before its hand-written fast path (src/engine/time.ts before #24's change).
    const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;
    const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    const oracle = (t: string): number => {
      if (t.length > 64) return Number.NaN;
      const m = ISO.exec(t);
      if (!m) return Number.NaN;
      const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
      const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
      if (month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : DAYS[month - 1])) return Number.NaN;
      const hour = m[4] === undefined ? 0 : Number(m[4]);
      const minute = m[5] === undefined ? 0 : Number(m[5]);
      let second = m[6] === undefined ? 0 : Number(m[6]);
      let ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
      if (minute > 59 || second > 60) return Number.NaN;
      if (hour > 24 || (hour === 24 && (minute !== 0 || second !== 0 || ms !== 0))) return Number.NaN;
      if (second === 60) [second, ms] = [59, 999];
      let off = 0;
      if (m[9] !== undefined) {
        const oh = Number(m[10]);
        const om = m[11] === undefined ? 0 : Number(m[11]);
        if (oh > 23 || om > 59) return Number.NaN;
        off = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
      }
      const d = new Date(0);
      d.setUTCFullYear(year, month - 1, day);
      return d.getTime() + ((hour * 60 + minute - off) * 60 + second) * 1000 + ms;
    };
    // Mostly in range (so a mistake in the form reading shows as a number where the regex says NaN), sometimes not.
    const num = (min: number, max: number) => fc.oneof({ arbitrary: fc.integer({ min, max }).map((x) => String(x).padStart(2, '0')), weight: 8 }, { arbitrary: fc.integer({ min: 0, max: 99 }).map((x) => String(x).padStart(2, '0')), weight: 1 }, { arbitrary: fc.constantFrom('1', '123', 'ab', '', '0x'), weight: 1 });
    const year = fc.oneof({ arbitrary: fc.integer({ min: 0, max: 9999 }).map((x) => String(x).padStart(4, '0')), weight: 9 }, { arbitrary: fc.constantFrom('999', '20a6', '+2026'), weight: 1 });
    const sep = fc.constantFrom('T', 'T', 't', ' ', 'x', '');
    const frac = fc.oneof(fc.constant(''), fc.tuple(fc.constantFrom('.', ',', ':'), fc.stringMatching(/^\d{0,8}$/)).map(([a, b]) => a + b));
    const zone = fc.oneof(fc.constantFrom('', 'Z', 'z', 'ZZ', 'Z ', '+', '-', 'Q'), fc.tuple(fc.constantFrom('+', '-'), num(0, 23), fc.constantFrom('', ':', '::', '.', ' '), fc.oneof(fc.constant(''), num(0, 59))).map((p) => p.join('')));
    const text = fc.tuple(year, fc.constantFrom('-', '-', '/'), num(1, 12), fc.constant('-'), num(1, 28), sep, num(0, 24), fc.constantFrom(':', ':', '.'), num(0, 59), fc.constantFrom(':', ':', ''), num(0, 60), frac, zone).map((p) => p.join(''));
    fc.assert(
      fc.property(text, (t) => {
        expect(Object.is(parseTimestamp(t), oracle(t))).toBe(true);
      }),
      { numRuns: 20_000 },
    );
  });
});
