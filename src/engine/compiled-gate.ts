/** The finalization gate as compiled from a blueprint (`finalization_gate:` + `guardrails:`; src/engine/gate, docs/gate.md). */
import type { SourcePosition } from '../errors.js';
import type { CompiledCondition, WhenMatcher } from './condition.js';

/** A compiled RE2 pattern with the text shown when it hits. */
export interface GatePattern {
  id: string;
  source: string;
  message: string;
  test(text: string): boolean;
}

export type OnJudgeError = 'escalate' | 'block' | 'finalize_with_limitations' | 'finalize';

export interface CustomReasonCode {
  code: string;
  hardFail: boolean;
}

/** Effective settings of one gate (the blueprint's, or a skill's: the blueprint's with the skill's override). */
export interface GateSettings {
  enabled: boolean;
  maxRetries: number;
  strictness: 'low' | 'medium' | 'high';
  prompt: 'A' | 'B' | 'lite';
  model?: string;
  judgeTimeoutMs?: number;
  customReasonCodes: CustomReasonCode[];
  /** Custom intents → required elements (§9.4); built-in intents are in codes.ts. */
  intents: Record<string, string[]>;
  safetyPatterns: GatePattern[];
  keywordBlocklist: GatePattern[];
  onJudgeError: OnJudgeError;
}

export type GuardrailHook = 'final_answer' | 'tool_call';

interface GuardrailBase {
  id: string;
  description?: string;
  when: WhenMatcher;
  /** Tier 1: applies when the registry lists any of these skills for the agent (D44); tiers 2-3: the trace's registry-checked skill_id. undefined = every job. */
  skills?: string[];
  position?: SourcePosition;
}

/** Tier 1, hard safety: mechanical only (a DSL invariant and/or RE2 patterns), 100% enforced. */
export interface Tier1Rule extends GuardrailBase {
  tier: 1;
  appliesTo: readonly GuardrailHook[];
  /** DSL invariant (spec-decisions D11, as restated in docs/gate.md): the rule is violated when it is false. */
  condition?: CompiledCondition;
  /** A match is a violation: on the draft at the gate, on the string leaves of `args` at tool_call. */
  patterns: GatePattern[];
  message: string;
}

/** Tier 2, process: ordered tool steps. */
export interface Workflow extends GuardrailBase {
  tier: 2;
  steps: string[];
  /** Every step must have happened before the answer is final (else only their order is enforced). */
  required: boolean;
  stepsPosition?: SourcePosition;
}

/** Tier 3, style: soft guidance handed back in directives; never fails the gate. */
export interface StyleRule extends GuardrailBase {
  tier: 3;
  text: string;
}

export type Guardrail = Tier1Rule | Workflow | StyleRule;

export interface CompiledGate {
  settings: GateSettings;
  /** Effective settings per skill id (base + override), used only for skills the registry lists for the agent. */
  skills: Record<string, GateSettings>;
  tier1: Tier1Rule[];
  workflows: Workflow[];
  style: StyleRule[];
}
