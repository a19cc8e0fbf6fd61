import { describe, expect, it } from 'vitest';
import { StewardMetrics } from '../../../src/observability/metrics.js';

const series = async (m: StewardMetrics, name: string): Promise<Record<string, string | number>[]> =>
  (await m.registry.getSingleMetric(name)!.get()).values.map((v) => ({ ...(v.labels as Record<string, string>), value: v.value }));

describe('steward_trust_debt cardinality', () => {
  it('keeps one series per agent for the most recently changed agents only, and per-level counts of the same agents', async () => {
    const m = new StewardMetrics({ maxTrustDebtSeries: 2 });
    m.setTrustDebt('acme', 'a', 0.1, 'normal');
    m.setTrustDebt('acme', 'b', 0.4, 'elevated_monitoring');
    m.setTrustDebt('acme', 'a', 0.6, 'restricted_mode'); // a becomes most recent
    m.setTrustDebt('globex', 'c', 0.2, 'normal'); // evicts b, the least recently changed
    expect(await series(m, 'steward_trust_debt')).toEqual([
      { tenant: 'acme', agent_id: 'a', value: 0.6 },
      { tenant: 'globex', agent_id: 'c', value: 0.2 },
    ]);
    const levels = Object.fromEntries((await series(m, 'steward_trust_debt_agents')).map((v) => [v.level, v.value]));
    expect(levels).toEqual({ normal: 1, elevated_monitoring: 0, restricted_mode: 1 });
    for (let i = 0; i < 1000; i++) m.setTrustDebt('t', `x${i}`, 0, 'normal');
    expect(await series(m, 'steward_trust_debt')).toHaveLength(2);
  });
});

describe('steward_consumer_lag series', () => {
  it('drops the series of partitions a stage no longer owns, and all of a stage\'s series when it stops', async () => {
    const m = new StewardMetrics();
    m.setLag('tripwire', 'acgp.traces', 0, 5);
    m.setLag('tripwire', 'acgp.traces', 1, 7);
    m.setLag('tripwire', 'acgp.traces', 2, 9);
    m.setLag('sink', 'acgp.decisions', 1, 3);
    m.setLag('tripwire', 'acgp.traces', 1, 2); // updates, no second series
    // A rebalance leaves this instance partitions 1 and 3; the sink's series are another stage's.
    m.retainLag('tripwire', { 'acgp.traces': [1, 3] });
    expect(await series(m, 'steward_consumer_lag')).toEqual([
      { stage: 'tripwire', topic: 'acgp.traces', partition: '1', value: 2 },
      { stage: 'sink', topic: 'acgp.decisions', partition: '1', value: 3 },
    ]);
    m.retainLag('tripwire', { 'acgp.reviews': [1] }); // same partition number on another topic is not ours
    m.setLag('tripwire', 'acgp.traces', 0, 1); // a partition regained after being dropped reports again
    expect(await series(m, 'steward_consumer_lag')).toEqual([
      { stage: 'sink', topic: 'acgp.decisions', partition: '1', value: 3 },
      { stage: 'tripwire', topic: 'acgp.traces', partition: '0', value: 1 },
    ]);
    m.retainLag('sink');
    m.retainLag('scorer'); // never reported: nothing to drop
    expect(await series(m, 'steward_consumer_lag')).toEqual([{ stage: 'tripwire', topic: 'acgp.traces', partition: '0', value: 1 }]);
  });
});
