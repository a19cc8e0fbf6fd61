/**
 * credit_card, `_` and `/` as group separators (#20 review): a chain joined by them counts only when it stands alone.
 * Four random 4-digit groups pass issuer and Luhn ~2.6 % of the time, so path segments and numeric literals must not
 * count; a card written that way in prose still does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENTITY_DETECTORS } from '../../../../src/engine/dsl/entities.js';
import { digits, withLuhn } from './helpers.js';

const D = ENTITY_DETECTORS;

describe('credit_card: `_` and `/` chains count only standing alone', () => {
  it('finds a card written with `_` or `/` in prose, quotes, brackets, after a date or before punctuation', () => {
    for (const s of [
      '4111/1111/1111/1111',
      '4111_1111_1111_1111',
      'my card is 4111/1111/1111/1111, exp 12/27',
      'card: 4111_1111_1111_1111.',
      '(5555/5555/5555/4444)',
      '"4111_1111_1111_1111"',
      'paid on 2024/01/15: 4111/1111/1111/1111',
      'card 4111_1111_1111_1111_', // a trailing '_' with no digit after it
      'ref 1234 4111/1111/1111/1111', // the '/' chain starts at 4111: a space before it
      'x\n4111/1111/1111/1111\n',
    ])
      expect(D.credit_card(s), s).toBe(true);
  });

  it('URL paths, file paths, numeric and hex literals and dates are not cards', () => {
    for (const s of [
      // URL and file paths: a '/' or letter before, a '/' or '.ext' after
      'GET /api/shards/4111/1111/1111/1111',
      'GET /api/shards/4111/1111/1111/1111/status',
      'see https://example.com/orders/4111/1111/1111/1111',
      'https://example.com/4111/1111/1111/1111?page=2',
      'path data/4111/1111/1111/1111.json',
      '4111/1111/1111/1111/',
      '4111/1111/1111/1111/5', // a 1-digit segment after it
      'logs/2024/0315/4111/1111/1111/1111.gz',
      'C:\\data\\shard_4111_1111_1111_1111.csv',
      'v4111/1111/1111/1111',
      // numeric literals with '_'
      'const x = 0x4111_1111_1111_1111;',
      'const X = 0X5555_5555_5555_4444;',
      'const big = 4111_1111_1111_1111n;',
      'let n: u64 = 4111_1111_1111_1111u64;',
      'x = 1_000_000 + 4_111_1111_1111_1111',
      'N = 1_0000_0000_0000_0000',
      '4111_1111_1111_1111_12', // more digits after '_'
      'ids: 12_4111_1111_1111_1111',
      '3.4111_1111_1111_1111',
      // dates and ids
      '2024/01/15/4111/1111/1111/1111',
      '2024_01_15_4111_1111_1111_1111',
      'order_4111_1111_1111_1111',
    ])
      expect(D.credit_card(s), s).toBe(false);
  });

  it('random 4-digit groups in paths and hex literals never count; a Luhn-valid card in prose always does (property)', () => {
    fc.assert(
      fc.property(fc.array(digits(4), { minLength: 4, maxLength: 4 }), fc.constantFrom('/', '_'), (g, sep) => {
        const chain = g.join(sep);
        for (const s of [`GET /api/shards/${chain}`, `GET /api/shards/${chain}/status`, `const M: u64 = 0x${chain};`, `f(${chain}n)`])
          expect(D.credit_card(s), s).toBe(false);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.constantFrom('4', '51', '55', '2221', '6011'), digits(14), fc.constantFrom('/', '_'), (prefix, rest, sep) => {
        const card = withLuhn((prefix + rest).slice(0, 15)).match(/.{4}/g)!.join(sep);
        for (const s of [`card ${card} thanks`, `(${card})`, `card: ${card}.`]) expect(D.credit_card(s), s).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
