// The dashboard's panel cache (panel-cache.ts) on its own: reuse within the TTL for the same key, a new key
// (another range or a new data fingerprint) computes, one computation for concurrent callers, failures not kept,
// the oldest entries dropped past the bound. Its effect on real ClickHouse data: test/integration/dashboard/panel-cache.int.test.ts.
import { describe, expect, it } from 'vitest';
import { fingerprintSql, PanelCache } from '../../../src/adapters/dashboard/panel-cache.js';

describe('dashboard panel cache', () => {
  it('reuses an answer for the same key within the TTL and recomputes after it', async () => {
    let t = 0;
    const cache = new PanelCache<number>({ ttlMs: 1000, now: () => t });
    let runs = 0;
    const compute = async () => ++runs;
    expect(await cache.get('a|f1', compute)).toBe(1);
    t = 999;
    expect(await cache.get('a|f1', compute)).toBe(1);
    t = 1000;
    expect(await cache.get('a|f1', compute)).toBe(2);
    expect(cache.computed).toBe(2);
    expect(cache.hits).toBe(1);
  });

  it('computes again for another key: a new fingerprint is new data', async () => {
    const cache = new PanelCache<string>({ ttlMs: 60_000, now: () => 0 });
    expect(await cache.get('range|f1', async () => 'old')).toBe('old');
    expect(await cache.get('range|f2', async () => 'new')).toBe('new');
    expect(await cache.get('other|f2', async () => 'other')).toBe('other');
    expect(cache.computed).toBe(3);
  });

  it('shares one computation between concurrent callers', async () => {
    const cache = new PanelCache<number>({ ttlMs: 60_000, now: () => 0 });
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const compute = async () => {
      runs += 1;
      await gate;
      return 7;
    };
    const all = Promise.all([cache.get('k', compute), cache.get('k', compute), cache.get('k', compute)]);
    release();
    expect(await all).toEqual([7, 7, 7]);
    expect(runs).toBe(1);
  });

  it('does not keep a failure: the next request computes again', async () => {
    const cache = new PanelCache<number>({ ttlMs: 60_000, now: () => 0 });
    await expect(cache.get('k', async () => Promise.reject(new Error('clickhouse down')))).rejects.toThrow(/down/);
    expect(await cache.get('k', async () => 5)).toBe(5);
    expect(cache.computed).toBe(2);
  });

  it('keeps at most maxEntries answers, dropping the oldest', async () => {
    const cache = new PanelCache<string>({ ttlMs: 60_000, maxEntries: 2, now: () => 0 });
    for (const k of ['a', 'b', 'c']) await cache.get(k, async () => k);
    await cache.get('c', async () => 'c2');
    await cache.get('b', async () => 'b2');
    await cache.get('a', async () => 'a2');
    expect(cache.computed).toBe(4);
  });

  it('fingerprints the active parts of the dashboard database only, with a validated name', () => {
    expect(fingerprintSql('steward_x')).toMatch(/FROM system\.parts WHERE database = 'steward_x' AND active/);
    expect(() => fingerprintSql("x' OR 1=1 --")).toThrow();
  });
});
