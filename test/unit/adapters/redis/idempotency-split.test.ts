/** How a batch's keys are split between its group and per-key claims (D48, src/adapters/redis/idempotency-claims.ts). */
import { describe, expect, it } from 'vitest';
import { splitKeys } from '../../../../src/adapters/redis/idempotency-claims.js';

describe('splitKeys', () => {
  it('keeps the suffixes of the batch key\'s form as one string, distinct, in order; repeats point at the first', () => {
    const sp = splitKeys(['B1_t1', 'B1_t2', '', 'B1_t1', 'x', 'B1_t_3'], 'B1');
    expect(sp.blob).toBe('\nt1\nt2\nt_3\n');
    expect(sp.distinct).toBe(3);
    expect(sp.gIdx).toEqual([0, 0, 0, 1, 1, 0, 3, 0, 1, 5, 2, 0]);
    expect(sp.perKey).toEqual(['x']);
    expect(sp.pIdx).toEqual([4]);
  });

  it('claims per key what a group cannot name: no batch key, a batch key with _ or a control character, an empty or control-character suffix, another prefix', () => {
    for (const group of [undefined, '', 'B_1', 'B\n1', 'x'.repeat(257)]) {
      const sp = splitKeys(['B_1_a', 'B\n1_a'], group);
      expect(sp.blob).toBe('');
      expect(sp.perKey).toEqual(['B_1_a', 'B\n1_a']);
    }
    const sp = splitKeys(['B1_', 'B1_a\nb', 'B1x_a', 'B1-a', 'B1_ok'], 'B1');
    expect(sp.perKey).toEqual(['B1_', 'B1_a\nb', 'B1x_a', 'B1-a']);
    expect(sp.blob).toBe('\nok\n');
  });
});
