import { describe, expect, it } from 'vitest';
import { BUCKETS_MS, MAX_BUCKETS, allowedHostNames, bucketFor, hostHeaderName, lit, parseChoice, parseLimit, parseMs, parseRange, parseText } from '../../../src/adapters/dashboard/params.js';
import { StewardError } from '../../../src/errors.js';

const NOW = 1_764_000_000_000;

describe('dashboard query parameters', () => {
  it('defaults to the last 24 h up to now, with the smallest bucket giving at most MAX_BUCKETS points', () => {
    const r = parseRange({}, NOW);
    expect(r).toEqual({ fromMs: NOW - 86_400_000, toMs: NOW, bucketMs: 900_000 });
    expect(86_400_000 / r.bucketMs).toBeLessThanOrEqual(MAX_BUCKETS);
    expect(86_400_000 / 300_000).toBeGreaterThan(MAX_BUCKETS);
  });

  it('picks buckets by span and caps at the largest', () => {
    expect(bucketFor(0, 3_600_000)).toBe(60_000);
    expect(bucketFor(0, 7 * 86_400_000)).toBe(3_600_000);
    expect(bucketFor(0, 10 * 365 * 86_400_000)).toBe(BUCKETS_MS[BUCKETS_MS.length - 1]);
  });

  it('accepts an explicit bucket only from the list', () => {
    expect(parseRange({ from: '0', to: '3600000', bucket: '300000' }, NOW).bucketMs).toBe(300_000);
    expect(() => parseRange({ from: '0', to: '3600000', bucket: '12345' }, NOW)).toThrow(/bucket must be one of/);
  });

  it('Host names: port and IPv6 brackets dropped, case and a trailing dot ignored; absent is no name', () => {
    expect(['localhost:8790', '[::1]:8790', 'Dash.Internal.', '10.0.0.7', '[fe80::1]'].map(hostHeaderName)).toEqual(['localhost', '::1', 'dash.internal', '10.0.0.7', 'fe80::1']);
    expect(hostHeaderName(undefined)).toBeUndefined();
    expect(hostHeaderName('')).toBeUndefined();
    expect([...allowedHostNames(undefined)].sort()).toEqual(['127.0.0.1', '::1', 'localhost']);
    expect([...allowedHostNames('::', ['[fe80::1]', 'X.example'])].sort()).toEqual(['127.0.0.1', '::1', 'fe80::1', 'localhost', 'x.example']);
  });

  it('an explicit bucket is held to MAX_BUCKETS over the range too (review finding 10)', () => {
    expect(() => parseRange({ from: '0', to: String(NOW), bucket: '60000' }, NOW)).toThrow(/bucket 60000 ms gives 29400000 buckets over 1764000000000 ms \(at most 240\)/);
    expect(parseRange({ from: '0', to: String(240 * 60_000), bucket: '60000' }, NOW).bucketMs).toBe(60_000);
    expect(() => parseRange({ from: '0', to: String(240 * 60_000 + 1), bucket: '60000' }, NOW)).toThrow(/at most 240/);
    expect(parseRange({ from: String(NOW - 86_400_000), to: String(NOW), bucket: '3600000' }, NOW).bucketMs).toBe(3_600_000);
  });

  it.each(['1 OR 1=1', '-5', '1e3', '0x10', '12.5', "1'; DROP TABLE decisions --", '99999999999999999'])('refuses %j as a time', (v) => {
    expect(() => parseRange({ from: v }, NOW)).toThrow(StewardError);
    expect(() => parseMs(v, 'from', 0)).toThrow(/from/);
  });

  it('refuses a range that ends before it starts, with a usage error', () => {
    const e = (() => {
      try {
        parseRange({ from: '2000', to: '1000' }, NOW);
      } catch (err) {
        return err as StewardError;
      }
    })();
    expect(e?.code).toBe('STEWARD_USAGE');
    expect(e?.message).toMatch(/from \(2000\) is after to \(1000\)/);
  });

  it('bounds limits', () => {
    expect(parseLimit(undefined, 100)).toBe(100);
    expect(parseLimit('25', 100)).toBe(25);
    for (const bad of ['0', '501', '-1', '1;', 'ten']) expect(() => parseLimit(bad, 100)).toThrow(/limit/);
  });

  it('takes choices from the whitelist only', () => {
    expect(parseChoice('agent', 'dim', ['type', 'agent'] as const)).toBe('agent');
    expect(() => parseChoice('agent_id) OR (1', 'dim', ['type', 'agent'] as const)).toThrow(/dim must be one of type, agent/);
    expect(() => parseChoice(undefined, 'dim', ['type'] as const)).toThrow(/dim/);
  });

  it('makes text literals that cannot leave their quotes', () => {
    expect(lit.text("it's", 'key').sql).toBe("'it\\'s'");
    expect(lit.text("a\\' OR 1=1 --", 'key').sql).toBe("'a\\\\\\' OR 1=1 --'");
    expect(() => lit.text('x'.repeat(257), 'key')).toThrow(/at most 256/);
    expect(() => lit.text('a\0b', 'key')).toThrow(/NUL/);
    expect(() => parseText('', 'key')).toThrow(/key is required/);
    expect(() => lit.int(1.5, 'n')).toThrow(/integer/);
    expect(lit.int(42, 'n').toString()).toBe('42');
  });
});
