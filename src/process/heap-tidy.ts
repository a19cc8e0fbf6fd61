/**
 * One full garbage collection after start-up and after each recompile (docs/pipeline.md "Start-up leaves a
 * full root map"): the schema compilers leave thousands of dead one-field objects that fill V8's root map's
 * 1536 transitions until a full collection clears them, and while it is full new objects (`{}` filled by name, and
 * object literals too) get maps of their own, so the code reading them misses its property caches on every trace.
 */
import type { BlueprintHolder } from '../adapters/fs/blueprint-watcher.js';

let pending: NodeJS.Timeout | undefined;

/**
 * V8's `gc`, present when node runs with --expose-gc (the Dockerfile and docker-compose.yml start it so; elsewhere
 * `NODE_OPTIONS=--expose-gc`). Without it nothing is done: src/ runs no `vm` or `Function` code to get one (the security contract), and
 * `v8.queryObjects`, the public way to force a full collection, took ~400 ms on a 30 MB heap (several rounds and a
 * heap walk) against ~20 ms for one `gc()`.
 */
const fullGc = (): (() => void) | undefined => {
  const gc = (globalThis as { gc?: () => void }).gc;
  return typeof gc === 'function' ? gc : undefined;
};

/** Whether tidyHeapAfterCompile can run (node started with --expose-gc). */
export const heapTidyAvailable = (): boolean => fullGc() !== undefined;

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

/** Tidies after each accepted reload of `holder` (every blueprint set the process watches: the served one, a shadow). */
export const tidyAfterReloads = (holder: Pick<BlueprintHolder, 'onChange'>): (() => void) => holder.onChange((ev) => void (ev.ok && tidyHeapAfterCompile()));
