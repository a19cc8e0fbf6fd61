import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { heapTidyAvailable, tidyAfterReloads, tidyHeapAfterCompile } from '../../../src/process/heap-tidy.js';

const tick = () => new Promise((r) => setTimeout(r, 5));
const g = globalThis as { gc?: () => void };

describe('tidyHeapAfterCompile', () => {
  const own = g.gc;
  afterEach(() => {
    g.gc = own;
    delete process.env.STEWARD_HEAP_TIDY;
  });

  it('calls gc once on the next turn, however often it is asked in one turn', async () => {
    let calls = 0;
    g.gc = () => void calls++;
    expect(heapTidyAvailable()).toBe(true);
    expect(tidyHeapAfterCompile()).toBe(true);
    expect(tidyHeapAfterCompile()).toBe(true);
    expect(calls).toBe(0);
    await tick();
    expect(calls).toBe(1);
    tidyHeapAfterCompile();
    await tick();
    expect(calls).toBe(2);
  });

  it('tidyAfterReloads: a collection after each accepted reload of a blueprint holder, none after a rejected one', async () => {
    let calls = 0;
    g.gc = () => void calls++;
    let listener: ((ev: { ok: boolean }) => void) | undefined;
    tidyAfterReloads({ onChange: (cb) => ((listener = cb as (ev: { ok: boolean }) => void), () => undefined) });
    listener!({ ok: false });
    await tick();
    expect(calls).toBe(0);
    listener!({ ok: true });
    await tick();
    expect(calls).toBe(1);
  });

  it('without --expose-gc, or with STEWARD_HEAP_TIDY=off: nothing scheduled', async () => {
    g.gc = undefined;
    expect(heapTidyAvailable()).toBe(false);
    expect(tidyHeapAfterCompile()).toBe(false);
    let calls = 0;
    g.gc = () => void calls++;
    process.env.STEWARD_HEAP_TIDY = 'off';
    expect(tidyHeapAfterCompile()).toBe(false);
    await tick();
    expect(calls).toBe(0);
  });

  it('in a real node with --expose-gc: a root map filled by dead objects no longer splits literals after it', () => {
    const probe = fileURLToPath(new URL('./fixtures/root-map-probe.ts', import.meta.url));
    const r = spawnSync(process.execPath, ['--expose-gc', '--allow-natives-syntax', '--import', 'tsx', probe], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    // before: the filled root map gives each object its own map (the slowdown); after: shared again.
    expect(JSON.parse(r.stdout.trim())).toEqual({ before: false, scheduled: true, after: true });
  });
});
