import { describe, expect, it } from 'vitest';
import { tidyHeapAfterCompile } from '../../../src/process/heap-tidy.js';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('tidyHeapAfterCompile', () => {
  it('runs a full collection soon: a weakly held object is gone after it (scavenges keep WeakRef targets)', async () => {
    let ref: WeakRef<object> | undefined;
    (() => {
      ref = new WeakRef({ big: new Array(1000).fill(0) });
    })();
    await tick(); // WeakRef targets live at least until the end of the job that created them
    expect(tidyHeapAfterCompile()).toBe(true);
    await tick();
    expect(ref!.deref()).toBeUndefined();
  });

  it('does not leave gc on the global object', () => {
    tidyHeapAfterCompile();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it('STEWARD_HEAP_TIDY=off: nothing scheduled', () => {
    process.env.STEWARD_HEAP_TIDY = 'off';
    try {
      expect(tidyHeapAfterCompile()).toBe(false);
    } finally {
      delete process.env.STEWARD_HEAP_TIDY;
    }
  });
});
