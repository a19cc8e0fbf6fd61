/**
 * ACM plan guards (docs/acm.md "Guards", docs/spec-decisions.md "ACM run governance"): conditions of
 * the ordinary DSL restricted to recorded facts, so a replay computes the same branch (ACM §13
 * determinism rule). A guard may read
 *   $<task>.field       the recorded output of <task> (the edge's source or one of its ancestors)
 *   context.facts.*     the facts of the plan's bound context packet
 *   policy.*            the recorded policy response of the edge's source task (policy.allow, ...)
 * and call only the stateless standard functions. Anything else is a problem with the offset of the
 * offending name, found before anything is evaluated.
 */
import type { AgentInfo, CompiledCondition, EvalContext, Trace } from '../types.js';
import type { DslProblem, Node } from './ast.js';
import { STATEFUL_FUNCTIONS, BUILTIN_FUNCTIONS } from './functions.js';
import { DEFAULT_DSL_LIMITS } from './ast.js';
import { parseCondition } from './structured.js';
import { compileCondition, type DslCompileOptions } from './condition.js';

export type GuardProblemCode = DslProblem['code'] | 'STEWARD_ACM_GUARD_UNRECORDED';

export interface GuardProblem extends Omit<DslProblem, 'code'> {
  code: GuardProblemCode;
}

/** A fact a guard reads, for validation messages and the BRANCH_TAKEN record. */
export interface GuardRef {
  kind: 'task' | 'context' | 'policy';
  /** Task id for `task`, the fact name for `context`, the field for `policy`. */
  name: string;
  /** The written reference (`$t3.risk`). */
  text: string;
  offset: number;
}

export interface GuardScope {
  /** True when `$<taskId>` is recorded by the time the guard is evaluated. */
  recordedTask(taskId: string): boolean;
}

export interface CompiledGuard {
  readonly source: string;
  readonly refs: readonly GuardRef[];
  readonly condition: CompiledCondition;
  /** Synchronous by construction (no stateful or custom functions). */
  evaluate(facts: GuardFacts): boolean;
}

/** What a guard sees: all of it recorded in the run state. */
export interface GuardFacts {
  tasks: Record<string, unknown>;
  contextFacts: Record<string, unknown>;
  policy: Record<string, unknown>;
}

const FACTS_ONLY = 'guards read recorded facts only: $<task>.field, context.facts.*, policy.*';

function walk(node: Node, visit: (n: Node) => void): void {
  visit(node);
  switch (node.kind) {
    case 'compare':
      walk(node.left, visit);
      walk(node.right, visit);
      break;
    case 'not':
      walk(node.operand, visit);
      break;
    case 'all':
    case 'any':
      for (const i of node.items) walk(i, visit);
      break;
    case 'call':
      for (const a of node.args) walk(a, visit);
      break;
    default:
      break;
  }
}

/** The references of a parsed guard and the problems of names outside the recorded facts. */
function checkRefs(root: Node, scope: GuardScope | undefined): { refs: GuardRef[]; problems: GuardProblem[] } {
  const refs: GuardRef[] = [];
  const problems: GuardProblem[] = [];
  const bad = (n: Node, message: string, code: GuardProblemCode = 'STEWARD_ACM_GUARD_UNRECORDED') =>
    problems.push({ code, message, path: n.path, ...(n.offset >= 0 ? { offset: n.offset } : {}) });
  walk(root, (n) => {
    if (n.kind === 'call') {
      if (STATEFUL_FUNCTIONS.has(n.name)) bad(n, `${n.name}() reads live state; ${FACTS_ONLY}`);
      else if (!(n.name in BUILTIN_FUNCTIONS)) bad(n, `${n.name}() is not a standard function; guards call only stateless standard functions`);
      return;
    }
    if (n.kind !== 'field') return;
    const [head, second] = n.segments;
    if (typeof head === 'string' && head.startsWith('$')) {
      const task = head.slice(1);
      if (second === undefined) bad(n, `'${head}' names a task output; read one of its fields ($${task}.field)`);
      else if (scope && !scope.recordedTask(task)) bad(n, `'${n.text}' reads task ${task}, which is not recorded when this guard runs (not the edge's source or one of its predecessors)`);
      refs.push({ kind: 'task', name: task, text: n.text, offset: n.offset });
    } else if (head === 'context') {
      if (second !== 'facts' || n.segments.length < 3) bad(n, `'${n.text}' is not a context fact (context.facts.<name>)`);
      else refs.push({ kind: 'context', name: String(n.segments[2]), text: n.text, offset: n.offset });
    } else if (head === 'policy') {
      if (second === undefined) bad(n, `'policy' needs a field (policy.allow)`);
      else refs.push({ kind: 'policy', name: String(second), text: n.text, offset: n.offset });
    } else {
      bad(n, `'${n.text}' is not a recorded fact; ${FACTS_ONLY}`);
    }
  });
  return { refs, problems };
}

const GUARD_AGENT: AgentInfo = { id: '', tenant: '', tier: 'ACL-0', tools: [], domains: [], registered: false };

/** The evaluation context of a guard: a synthetic root holding only the recorded facts. */
export function guardContext(f: GuardFacts): EvalContext {
  const root: Record<string, unknown> = { context: { facts: f.contextFacts }, policy: f.policy };
  for (const [id, out] of Object.entries(f.tasks)) root[`$${id}`] = out;
  return { trace: root as unknown as Trace, agent: GUARD_AGENT, trustDebt: 0, nowMs: 0, stateNamespace: '' };
}

/**
 * Compiles a guard once (at plan validation). `scope` says which task outputs are recorded by the time
 * the edge is evaluated; without it every `$task` is accepted (the plan validator always passes one).
 */
export function compileGuard(text: unknown, opts: DslCompileOptions, scope?: GuardScope): { guard?: CompiledGuard; problems: GuardProblem[]; refs: GuardRef[] } {
  if (typeof text !== 'string') return { problems: [{ code: 'STEWARD_DSL_PARSE', message: 'a guard is a string expression', path: '' }], refs: [] };
  const parsed = parseCondition(text, { ...DEFAULT_DSL_LIMITS, ...(opts.limits ?? {}) });
  if (!parsed.node) return { problems: parsed.problems, refs: [] };
  const { refs, problems } = checkRefs(parsed.node, scope);
  if (problems.length > 0) return { problems, refs };
  const compiled = compileCondition(text, { ...opts, allowTaskRefs: true });
  if (!compiled.condition) return { problems: compiled.problems, refs };
  const condition = compiled.condition;
  const guard: CompiledGuard = {
    source: text,
    refs,
    condition,
    evaluate: (facts) => condition.evaluate(guardContext(facts)) === true,
  };
  return { guard, problems: [], refs };
}
