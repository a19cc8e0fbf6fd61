/**
 * One full garbage collection after start-up and after each recompile (docs/pipeline.md "Start-up leaves a
 * full root map"): the schema compilers leave thousands of dead one-field objects that fill V8's root map's
 * 1536 transitions until a full collection clears them, and while it is full every object built from `{}` gets
 * a map of its own, so the code reading it misses its property caches on every trace.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;
let pending: NodeJS.Timeout | undefined;

/** V8's own `gc` (a constant expression in a fresh context: nothing from policy or traces). */
function fullGc(): (() => void) | null {
  if (gc !== undefined) return gc;
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return (gc = own);
  try {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  } catch {
    gc = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return gc;
}

/**
 * Runs one full collection soon (calls in the same turn coalesce into one). Returns whether one was
 * scheduled. The collection stops the process for a few milliseconds (tens on a large heap): call it after
 * compiling, not per event. STEWARD_HEAP_TIDY=off turns it off.
 */
export function tidyHeapAfterCompile(): boolean {
  if (process.env.STEWARD_HEAP_TIDY === 'off') return false;
  const run = fullGc();
  if (!run) return false;
  if (pending) return true;
  pending = setTimeout(() => {
    pending = undefined;
    run();
  }, 0);
  pending.unref();
  return true;
}
