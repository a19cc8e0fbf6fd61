/**
 * Plain-language rules (gate spec §7, §8; docs/rules.md): what an author writes, what `steward
 * compile-rules` records in the lock file beside the blueprint, and the tool input schemas imported
 * from MCP servers that `args.*` conditions are checked against.
 */

/** A `rules:` entry as authored. */
export interface AuthoredRule {
  id: string;
  text: string;
  /** 1: hard safety, must compile to a condition; 2: process rule, compiles to a workflow; absent: a rule that may stay text. */
  tier?: 1 | 2;
  /** The tool the rule governs: conditions over `args.*` are type-checked against its imported schema. */
  tool?: string;
}

/** One test case of a compiled rule: a trace (condition) or a tool-call sequence (workflow). */
export interface RuleTest {
  source: 'llm' | 'author';
  name?: string;
  /** Condition rules: the trace the condition is evaluated on. */
  trace?: Record<string, unknown>;
  /** Workflow rules: the job's tool calls in order. */
  calls?: string[];
  /** pass: the action complies (the invariant holds, the workflow is satisfied); fail: it violates the rule. */
  expect: 'pass' | 'fail';
  /** Filled in by the run: what the compiled form answered. */
  passed?: boolean;
}

export type RuleOutcome = 'mechanical' | 'text';

/** One rule in the lock file: everything a reviewer needs to judge what was compiled. */
export interface RuleLockEntry {
  id: string;
  /** sha256 hex of the rule text as authored; a different text makes the entry stale. */
  text_sha256: string;
  /** The model that translated it (null: no LLM answered). */
  model: string | null;
  kind: 'condition' | 'workflow';
  /** The DSL condition (an invariant: true when the action complies). */
  dsl?: string;
  workflow?: { steps: string[] };
  /**
   * sha256 hex of the compiled form as `steward compile-rules` wrote it (the DSL, or the workflow steps as
   * JSON): a reader — and the loader — can see a hand edit. Absent in locks written before it existed.
   */
  dsl_sha256?: string;
  tests: RuleTest[];
  outcome: RuleOutcome;
  /** Why a rule stayed text (no compile, a failed test, bad LLM output). */
  reason?: string;
}

export interface RuleLock {
  version: 1;
  /** The blueprint id the lock belongs to (name@version). */
  blueprint: string;
  rules: RuleLockEntry[];
}

/** JSON Schema of one tool's input, as imported from an MCP server's tools/list (docs/rules.md "MCP"). */
export type JsonSchema = Record<string, unknown>;

/** Tool name → its input schema; the union of every server a blueprint names. */
export type ToolSchemas = ReadonlyMap<string, JsonSchema>;
