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
