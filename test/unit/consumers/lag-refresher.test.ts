// LagRefresher's own recovery (the broker side is tested on real Kafka in test/integration/pipeline/lag-refresh):
// a failed tick does not stop later ones, and stop() neither waits for a hung tick nor lets another start.
import { describe, expect, it } from 'vitest';
import { LagRefresher } from '../../../src/consumers/lag-refresher.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import type { KafkaAdapter, StewardAdmin } from '../../../src/adapters/kafka/client.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An admin over a fixed partition 0 (high 10) whose group committed `committed`; `fail`/`hang` make calls fail or never answer. */
function fakeAdapter(state: { committed: string; fail: boolean; hang: boolean; opened: number; closed: number }): KafkaAdapter {
  const admin = (): StewardAdmin =>
    ({
      topicOffsets: async () => {
        if (state.hang) await new Promise(() => undefined);
        if (state.fail) throw new Error('broker unreachable');
        return [{ partition: 0, high: '10', low: '0' }];
      },
      groupOffsets: async () => [{ partition: 0, offset: state.committed }],
      disconnect: async () => {
        state.closed++;
      },
    }) as unknown as StewardAdmin;
  return {
    admin: async () => {
      state.opened++;
      return admin();
    },
  } as unknown as KafkaAdapter;
}

async function lagOf(metrics: StewardMetrics): Promise<number | undefined> {
  return (await metrics.consumerLag.get()).values.find((v) => v.labels.partition === '0' || v.labels.partition === 0)?.value;
}

describe('LagRefresher', () => {
  it('reports again after a failed tick, on a new admin connection', async () => {
    const state = { committed: '4', fail: true, hang: false, opened: 0, closed: 0 };
    const metrics = new StewardMetrics();
    const r = new LagRefresher({ adapter: fakeAdapter(state), groupId: 'g', stage: 'tripwire', metrics, everyMs: 20 });
    r.assigned({ t: [0] });
    r.start();
    try {
      await sleep(120);
      expect(await lagOf(metrics)).toBeUndefined();
      expect(state.closed).toBeGreaterThanOrEqual(1); // the failed connection was closed, not reused
      state.fail = false;
      for (let i = 0; i < 50 && (await lagOf(metrics)) === undefined; i++) await sleep(20);
      expect(await lagOf(metrics)).toBe(6);
      expect(state.opened).toBeGreaterThanOrEqual(2);
    } finally {
      await r.stop();
    }
  });

  it('stop() returns while a tick hangs, closes the connection, and no tick starts after it', async () => {
    const state = { committed: '4', fail: false, hang: true, opened: 0, closed: 0 };
    const metrics = new StewardMetrics();
    const r = new LagRefresher({ adapter: fakeAdapter(state), groupId: 'g', stage: 'tripwire', metrics, everyMs: 20 });
    r.assigned({ t: [0] });
    r.start();
    await sleep(100);
    expect(state.opened).toBe(1); // ticks do not stack behind the hung one
    await r.stop();
    expect(state.closed).toBe(1);
    state.hang = false;
    await sleep(100);
    expect(state.opened).toBe(1);
    expect(await lagOf(metrics)).toBeUndefined();
  });

  it('leaves alone a partition a chunk reported on within the interval', async () => {
    const state = { committed: '4', fail: false, hang: false, opened: 0, closed: 0 };
    const metrics = new StewardMetrics();
    const r = new LagRefresher({ adapter: fakeAdapter(state), groupId: 'g', stage: 'tripwire', metrics, everyMs: 1_000_000 });
    r.assigned({ t: [0] });
    metrics.setLag('tripwire', 't', 0, 1);
    r.reported('t', 0);
    await r.refresh();
    expect(await lagOf(metrics)).toBe(1); // the chunk's value stands; the broker's 6 is not read
    await r.stop();
  });
});
