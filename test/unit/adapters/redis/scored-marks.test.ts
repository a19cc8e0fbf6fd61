import { describe, expect, it } from 'vitest';
import { earlierInPartition } from '../../../../src/adapters/redis/scored-marks.js';

describe('earlierInPartition', () => {
  it.each([
    ['acgp.scoring:3:10', 'acgp.scoring', 3, '11', true],
    ['acgp.scoring:3:10', 'acgp.scoring', 3, '10', false], // the same record again (an aborted transaction)
    ['acgp.scoring:3:10', 'acgp.scoring', 3, '9', false],
    ['acgp.scoring:3:10', 'acgp.scoring', 4, '11', false], // re-partitioned: offsets of two partitions do not compare
    ['acgp.scoring:3:10', 'other.scoring', 3, '11', false], // another deployment's topic under the same Redis prefix
    ['acgp.scoring:13:10', 'acgp.scoring', 3, '11', false],
    ['acgp.scoring:3:99999999999999999999', 'acgp.scoring', 3, '100000000000000000000', true], // offsets beyond 2^53
    ['garbage', 'acgp.scoring', 3, '11', false],
    ['acgp.scoring:3:x', 'acgp.scoring', 3, '11', false],
  ] as const)('%s before %s/%s@%s: %s', (mark, topic, partition, offset, want) => {
    expect(earlierInPartition(mark, topic, partition, offset)).toBe(want);
  });
});
