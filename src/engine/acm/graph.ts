/** Graph checks of a plan: cycle detection (with the cycle to show) and ancestors, both linear in the graph. */

export interface GraphEdge {
  from: string;
  to: string;
  index: number;
}

/** A cycle as task ids (first = last) and the index of an edge on it, or undefined for a DAG. */
export function findCycle(nodes: readonly string[], edges: readonly GraphEdge[]): { path: string[]; edgeIndex: number } | undefined {
  const out = new Map<string, GraphEdge[]>();
  for (const e of edges) {
    const l = out.get(e.from);
    if (l) l.push(e);
    else out.set(e.from, [e]);
  }
  const state = new Map<string, 1 | 2>();
  // Iterative DFS: a planner may send thousands of tasks, deeper than the call stack allows.
  for (const start of nodes) {
    if (state.has(start)) continue;
    const stack: { node: string; i: number; via?: GraphEdge }[] = [{ node: start, i: 0 }];
    state.set(start, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const next = (out.get(top.node) ?? [])[top.i++];
      if (!next) {
        state.set(top.node, 2);
        stack.pop();
        continue;
      }
      const s = state.get(next.to);
      if (s === 1) {
        const at = stack.findIndex((f) => f.node === next.to);
        const path = [...stack.slice(at).map((f) => f.node), next.to];
        return { path, edgeIndex: next.index };
      }
      if (s === undefined) {
        state.set(next.to, 1);
        stack.push({ node: next.to, i: 0, via: next });
      }
    }
  }
  return undefined;
}

/** Predecessor lists, built once per plan for ancestorsOf. */
export function predecessors(edges: readonly GraphEdge[]): Map<string, string[]> {
  const inn = new Map<string, string[]>();
  for (const e of edges) {
    const l = inn.get(e.to);
    if (l) l.push(e.from);
    else inn.set(e.to, [e.from]);
  }
  return inn;
}

/** Every task with a path to `task` (not `task` itself). */
export function ancestorsOf(task: string, inn: ReadonlyMap<string, readonly string[]>): Set<string> {
  const seen = new Set<string>();
  const todo = [task];
  while (todo.length > 0) {
    const n = todo.pop()!;
    for (const p of inn.get(n) ?? []) {
      if (!seen.has(p)) {
        seen.add(p);
        todo.push(p);
      }
    }
  }
  seen.delete(task);
  return seen;
}
