/** Entity detectors: generated positives always hit; generated look-alikes rarely do (measured rates). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { abaValid, ENTITY_DETECTORS, ibanValid } from '../../../../src/engine/dsl/entities.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import { digits, ibanFor, withLuhn } from './helpers.js';

function rate(samples: string[], detect: (s: string) => boolean): number {
  return samples.filter(detect).length / samples.length;
}

describe('entity detectors', () => {
  it('finds every generated Luhn-valid Visa/Mastercard number, with or without separators', () => {
    fc.assert(
      fc.property(fc.constantFrom('4', '51', '55', '2221'), digits(14), fc.constantFrom('', ' ', '-'), (prefix, rest, sep) => {
        const n = withLuhn((prefix + rest).slice(0, 15));
        const text = `card: ${sep ? n.match(/.{1,4}/g)!.join(sep) : n} thanks`;
        expect(ENTITY_DETECTORS.credit_card(text)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('finds generated valid IBANs (DE, GB) and ABA numbers with context', () => {
    fc.assert(
      fc.property(digits(18), (d) => {
        expect(ENTITY_DETECTORS.bank_account(`pay ${ibanFor('DE', d)} today`)).toBe(true);
        expect(ibanValid(ibanFor('GB', 'WEST' + d.slice(0, 14)))).toBe(true);
      }),
      { numRuns: 200 },
    );
    expect(abaValid('011000015')).toBe(true);
    expect(abaValid('011000016')).toBe(false);
  });

  it('keeps false positives low on look-alikes (measured)', () => {
    const rnd = (arb: fc.Arbitrary<string>, n = 2000) => fc.sample(arb, { numRuns: n, seed: 4 });
    const rand16 = rnd(digits(16));
    const cardFp = rate(rand16, ENTITY_DETECTORS.credit_card);
    // Luhn alone passes 10% of random numbers; issuer prefixes cut that to a few percent.
    expect(cardFp).toBeLessThan(0.06);
    const uuids = rnd(fc.uuid());
    const hex40 = rnd(fc.array(fc.constantFrom(...'0123456789abcdef'), { minLength: 40, maxLength: 40 }).map((a) => a.join('')));
    for (const s of [...uuids, ...hex40]) expect(ENTITY_DETECTORS.secret(`id ${s}`)).toBe(false);
    const dates = rnd(fc.date({ min: new Date('1990-01-01'), max: new Date('2040-01-01'), noInvalidDate: true }).map((d) => d.toISOString()));
    expect(rate(dates, ENTITY_DETECTORS.ssn)).toBe(0);
    expect(rate(dates, ENTITY_DETECTORS.phone)).toBe(0);
    expect(rate(dates, ENTITY_DETECTORS.credit_card)).toBe(0);
    const nine = rnd(digits(9)).map((d) => `order ${d} shipped`);
    expect(rate(nine, ENTITY_DETECTORS.bank_account)).toBe(0);
    expect(rate(nine, ENTITY_DETECTORS.ssn)).toBe(0);
    const versions = rnd(fc.tuple(fc.nat(20), fc.nat(20), fc.nat(99)).map(([a, b, c]) => `v${a}.${b}.${c}`));
    expect(rate(versions, ENTITY_DETECTORS.ip_address)).toBe(0);
    const words = rnd(fc.array(fc.constantFrom('alpha', 'Beta', 'gamma', 'DELTA', 'epsilon', 'Zeta', 'eta', 'theta'), { minLength: 3, maxLength: 8 }).map((w) => w.join('')));
    expect(rate(words, ENTITY_DETECTORS.secret)).toBe(0);
  });

  it('flags random high-entropy API keys', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    const keys = fc.sample(fc.array(fc.constantFrom(...alphabet), { minLength: 32, maxLength: 40 }).map((a) => a.join('')), { numRuns: 500, seed: 9 });
    const hit = rate(keys.map((k) => `token=${k}`), ENTITY_DETECTORS.secret);
    expect(hit).toBeGreaterThan(0.9);
  });
});

describe('MemoryStateStore', () => {
  it('counts a sliding window, idempotent per hit id, per namespace and key', async () => {
    const s = new MemoryStateStore();
    expect(await s.hit('ns', 'k', 1000, 0, 'a')).toBe(1);
    expect(await s.hit('ns', 'k', 1000, 10, 'a')).toBe(1);
    expect(await s.hit('ns', 'k', 1000, 20, 'b')).toBe(2);
    expect(await s.hit('other', 'k', 1000, 20, 'b')).toBe(1);
    expect(await s.hit('ns', 'k', 1000, 1001, 'c')).toBe(2);
    expect(await s.hit('ns', 'k', 1000, 2100, 'd')).toBe(1);
    await s.set('ns', 'x', { a: 1 });
    expect(await s.get('ns', 'x')).toEqual({ a: 1 });
    expect(await s.get('other', 'x')).toBeUndefined();
  });
});
