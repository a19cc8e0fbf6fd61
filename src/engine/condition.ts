/** What a compiled condition (DSL) is and what it sees when it evaluates. */
import type { AgentInfo, Trace } from './trace.js';
import type { StateStore } from './ports.js';

/** What a compiled condition sees at evaluation time. Built once per trace, shared by all conditions. */
export interface EvalContext {
  trace: Trace;
  agent: AgentInfo;
  /** The agent's current trust debt (0..1). */
  trustDebt: number;
  /** Event time in ms (the trace timestamp in `eval`, event time in the stream). */
  nowMs: number;
  /** Namespace for state keys: `${tenant}:${agent_id}`. */
  stateNamespace: string;
  /**
   * Identity of this trace for idempotent state effects (rate-limit hits, trust debt); trace_id when
   * unset. The stream adds a digest of the record so a reused trace_id cannot make a different trace a
   * "redelivery" (docs/spec-decisions.md).
   */
  eventId?: string;
  state?: StateStore;
}

export interface CompiledCondition {
  /** Original text (or canonical rendering of a structured condition) for messages. */
  readonly source: string;
  /** True when the condition calls a stateful function; evaluate may then return a Promise. */
  readonly async: boolean;
  /** Names of functions used (for load-time tier checks, e.g. exceeds_rate needs eval_tier 1). */
  readonly functions: ReadonlySet<string>;
  /** Never throws for missing fields (comparison against a missing field is false). May throw StewardError for state failures. */
  evaluate(ctx: EvalContext): boolean | Promise<boolean>;
}

/** Matches trace keys (hook, tool, any field; an array value means any-of). Compiled once. */
export type WhenMatcher = (trace: Trace) => boolean;
