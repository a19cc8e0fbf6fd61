import { describe, expect, it } from 'vitest';
import { TrustDebtReadCache, cachedTrustDebtReads, invalidatingTrustDebtWrites } from '../../../../src/adapters/redis/trust-debt-read-cache.js';
import { DEFAULT_TRUST_DEBT_CONFIG, HOUR_MS, debtAt, levelFor, type AgentDebtState, type TrustDebtStore } from '../../../../src/engine/trust-debt/index.js';

const cfg = DEFAULT_TRUST_DEBT_CONFIG;
const T0 = Date.UTC(2026, 0, 1);

/** A source whose reads are counted and can be held open (to interleave writes with reads). */
function source() {
  const states = new Map<string, AgentDebtState>();
  const reads: string[] = [];
  let gate: Promise<void> | undefined;
  return {
    states,
    reads,
    hold() {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      return () => {
        gate = undefined;
        open();
      };
    },
    async state(tenant: string, agentId: string): Promise<AgentDebtState | undefined> {
      const k = `${tenant}/${agentId}`;
      reads.push(k);
      const v = states.get(k);
      if (gate) await gate;
      return v === undefined ? undefined : { ...v };
    },
  };
}

const st = (debt: number, lastMs: number): AgentDebtState => ({ debt, lastMs, windowMs: lastMs, level: levelFor(debt, cfg), applied: 1 });

describe('TrustDebtReadCache', () => {
  it('serves a read state until the TTL expires, then reads again', async () => {
    const src = source();
    let now = 1000;
    const c = new TrustDebtReadCache(src, { ttlMs: 250, now: () => now });
    src.states.set('acme/a1', st(0.2, T0));
    expect(await c.state('acme', 'a1')).toMatchObject({ debt: 0.2 });
    src.states.set('acme/a1', st(0.6, T0));
    now += 249;
    expect(await c.state('acme', 'a1')).toMatchObject({ debt: 0.2 });
    expect(src.reads).toHaveLength(1);
    now += 1;
    expect(await c.state('acme', 'a1')).toMatchObject({ debt: 0.6 });
    expect(src.reads).toHaveLength(2);
    expect(c.hits).toBe(1);
    expect(c.misses).toBe(2);
  });

  it('keys entries by tenant and agent', async () => {
    const src = source();
    const c = new TrustDebtReadCache(src, { ttlMs: 1000, now: () => 0 });
    src.states.set('acme/a1', st(0.1, T0));
    src.states.set('other/a1', st(0.7, T0));
    src.states.set('acme/a2', st(0.3, T0));
    expect((await c.state('acme', 'a1'))?.debt).toBe(0.1);
    expect((await c.state('other', 'a1'))?.debt).toBe(0.7);
    expect((await c.state('acme', 'a2'))?.debt).toBe(0.3);
    expect((await c.state('acme', 'a1'))?.debt).toBe(0.1);
    expect(src.reads).toEqual(['acme/a1', 'other/a1', 'acme/a2']);
  });

  it('caches unknown agents too (read as the floor) and stays bounded, evicting the oldest entry', async () => {
    const src = source();
    const c = new TrustDebtReadCache(src, { ttlMs: 1000, maxEntries: 2, now: () => 0 });
    expect(await c.state('t', 'x')).toBeUndefined();
    await c.state('t', 'y');
    await c.state('t', 'z');
    expect(c.size).toBe(2);
    await c.state('t', 'z');
    await c.state('t', 'y');
    expect(src.reads).toEqual(['t/x', 't/y', 't/z']);
    await c.state('t', 'x'); // evicted: read again
    expect(src.reads).toEqual(['t/x', 't/y', 't/z', 't/x']);
    expect(c.size).toBe(2);
  });

  it('shares one source read between concurrent misses of one agent', async () => {
    const src = source();
    src.states.set('t/a', st(0.4, T0));
    const c = new TrustDebtReadCache(src, { ttlMs: 1000, now: () => 0 });
    const release = src.hold();
    const p = Promise.all([c.state('t', 'a'), c.state('t', 'a'), c.state('t', 'a')]);
    release();
    expect((await p).map((s) => s?.debt)).toEqual([0.4, 0.4, 0.4]);
    expect(src.reads).toHaveLength(1);
  });

  it('does not keep a read that was in flight when the agent was invalidated', async () => {
    const src = source();
    src.states.set('t/a', st(0.1, T0));
    const c = new TrustDebtReadCache(src, { ttlMs: 1000, now: () => 0 });
    const release = src.hold();
    const stale = c.state('t', 'a');
    c.invalidate('t', 'a');
    src.states.set('t/a', st(0.6, T0));
    release();
    expect((await stale)?.debt).toBe(0.1); // that caller gets what it read
    expect((await c.state('t', 'a'))?.debt).toBe(0.6); // but it was not cached
    expect(src.reads).toHaveLength(2);
  });

  it('a read failure is not cached', async () => {
    let fail = true;
    const c = new TrustDebtReadCache(
      {
        async state() {
          if (fail) throw new Error('down');
          return st(0.2, T0);
        },
      },
      { ttlMs: 1000, now: () => 0 },
    );
    await expect(c.state('t', 'a')).rejects.toThrow('down');
    fail = false;
    expect((await c.state('t', 'a'))?.debt).toBe(0.2);
  });

  it('ttl 0 reads the source every time', async () => {
    const src = source();
    const c = new TrustDebtReadCache(src, { ttlMs: 0 });
    await c.state('t', 'a');
    await c.state('t', 'a');
    expect(src.reads).toHaveLength(2);
    expect(c.size).toBe(0);
  });
});

describe('cachedTrustDebtReads / invalidatingTrustDebtWrites', () => {
  function store(src: ReturnType<typeof source>) {
    const applied: string[] = [];
    const base = {
      async current() {
        throw new Error('not used');
      },
      async apply(ev: { tenant: string; agentId: string; eventId: string }) {
        applied.push(ev.eventId);
        src.states.set(`${ev.tenant}/${ev.agentId}`, st(0.9, T0));
        return { eventId: ev.eventId } as never;
      },
    } as unknown as TrustDebtStore;
    return { base, applied };
  }

  it('computes decay at each event time from the one cached state, exactly as the store does', async () => {
    const src = source();
    src.states.set('t/a', st(0.6, T0));
    const c = new TrustDebtReadCache(src, { ttlMs: 10_000, now: () => 0 });
    const { base } = store(src);
    const reads = cachedTrustDebtReads(base, c);
    for (const h of [0, 1, 24, 24 * 14]) {
      const at = T0 + h * HOUR_MS;
      const want = debtAt(st(0.6, T0), at, cfg);
      expect(await reads.current('t', 'a', at, cfg)).toEqual({ debt: want, level: levelFor(want, cfg) });
    }
    expect((await reads.current('t', 'a', T0, cfg)).level).toBe('restricted_mode');
    expect((await reads.current('t', 'nobody', T0, cfg)).debt).toBe(cfg.decay.minDebt);
    expect(src.reads).toEqual(['t/a', 't/nobody']);
  });

  it("this process's writes drop the agent's entry, so its next decision reads the new debt", async () => {
    const src = source();
    src.states.set('t/a', st(0.1, T0));
    src.states.set('t/b', st(0.1, T0));
    const c = new TrustDebtReadCache(src, { ttlMs: 60_000, now: () => 0 });
    const { base, applied } = store(src);
    const writes = invalidatingTrustDebtWrites(base, c);
    const reads = cachedTrustDebtReads(writes, c);
    expect((await reads.current('t', 'a', T0, cfg)).debt).toBeCloseTo(0.1, 12);
    expect((await reads.current('t', 'b', T0, cfg)).debt).toBeCloseTo(0.1, 12);
    await writes.apply({ eventId: 'e1', tenant: 't', agentId: 'a', atMs: T0, kind: 'decision', intervention: 'halt' } as never, cfg);
    expect(applied).toEqual(['e1']);
    expect((await reads.current('t', 'a', T0, cfg)).debt).toBeCloseTo(0.9, 12);
    expect((await reads.current('t', 'b', T0, cfg)).debt).toBeCloseTo(0.1, 12); // untouched agent stays cached
    expect(src.reads).toEqual(['t/a', 't/b', 't/a']);
  });
});
