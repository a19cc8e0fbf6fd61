/**
 * Files of a bundle that are derived from the run (task-io/, planner/, context/): one function each,
 * used by the builder and by the verifier, which rebuilds them from the replayed run and compares.
 */
import type { Trace } from '../../types.js';
import type { ContextVersion } from '../context.js';
import type { RunState } from '../run-state.js';
import { contextPath, json, safeName, type BundleFiles } from './layout.js';

export function taskIoFiles(run: RunState | undefined): BundleFiles {
  const m: BundleFiles = new Map();
  if (!run) return m;
  for (const id of Object.keys(run.tasks).sort()) {
    const t = run.tasks[id]!;
    m.set(`task-io/${safeName(id)}.json`, json({ task_id: id, ...t }));
  }
  return m;
}

export function plannerFiles(traces: readonly { trace: Trace }[]): BundleFiles {
  const m: BundleFiles = new Map();
  let n = 0;
  for (const { trace } of traces) {
    if (trace.hook !== 'plan') continue;
    n++;
    const { goal, plans, selection, planner } = trace as Record<string, unknown>;
    m.set(`planner/plan-${n}.json`, json({ trace_id: trace.trace_id, timestamp: trace.timestamp, goal, plans, selection, planner: planner ?? null }));
  }
  return m;
}

export function contextFiles(versions: readonly ContextVersion[]): BundleFiles {
  const m: BundleFiles = new Map();
  for (const v of versions) m.set(contextPath(v), json({ id: v.id, version: v.version, digest: v.digest, trace_id: v.trace_id ?? null, packet: v.packet }));
  return m;
}
