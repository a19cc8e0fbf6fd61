/**
 * The fixed vocabulary of the final alignment judge (docs/gate.md, gate spec §9.3–§9.5, §9.11):
 * reason codes, fix modes, intents with their required elements, and the strictness thresholds of
 * docs/spec-decisions.md ("Finalization gate" and spec-decisions D16, restated in docs/gate.md).
 */

export const VERDICTS = ['PASS', 'PASS_WITH_CAVEATS', 'FAIL'] as const;
export type GateVerdict = (typeof VERDICTS)[number];

export const FIX_MODES = ['REWRITE_ONLY', 'NEEDS_NEW_EVIDENCE', 'NEEDS_USER_CLARIFICATION'] as const;
export type FixMode = (typeof FIX_MODES)[number];

export const GATE_ACTIONS = ['finalize', 'rewrite', 'replan', 'ask_user', 'finalize_with_limitations', 'block'] as const;
export type GateAction = (typeof GATE_ACTIONS)[number];

export type JudgedBy = 'patterns' | 'rules' | 'llm';

export type Strictness = 'low' | 'medium' | 'high';
export type PromptId = 'A' | 'B' | 'lite';

/** §9.3 hard-fail codes: any of them makes the verdict FAIL whatever the score. */
export const HARD_FAIL_CODES = ['WRONG_ABSTRACTION_LEVEL', 'WRONG_ARTIFACT_TYPE', 'MISREAD_PRIMARY_GOAL', 'UNSUPPORTED_SPECIFICS', 'SAFETY_OR_POLICY_VIOLATION'] as const;
/** §9.3 soft codes: guide the repair, never fail on their own (except at strictness high, below). */
export const SOFT_CODES = ['MISSING_REQUIRED_ELEMENTS', 'INSUFFICIENT_DECISION_SUPPORT', 'OVERLY_GENERIC', 'NEEDS_CLARIFICATION', 'STRUCTURE_OR_CLARITY_ISSUES'] as const;
export const BUILTIN_REASON_CODES: readonly string[] = [...HARD_FAIL_CODES, ...SOFT_CODES];

/** Strictness → lower bounds of PASS and PASS_WITH_CAVEATS (decision 16); high adds two hard-fail codes. */
export const STRICTNESS: Record<Strictness, { pass: number; caveats: number; extraHardFail: readonly string[] }> = {
  low: { pass: 0.7, caveats: 0.5, extraHardFail: [] },
  medium: { pass: 0.8, caveats: 0.6, extraHardFail: [] },
  high: { pass: 0.85, caveats: 0.7, extraHardFail: ['NEEDS_CLARIFICATION', 'MISSING_REQUIRED_ELEMENTS'] },
};

/** §9.4 required elements per built-in intent (the long form; the prompts carry their own verbatim lists). */
export const BUILTIN_INTENTS: Readonly<Record<string, readonly string[]>> = {
  SYSTEM_CONTROL_FLOW: ['Actors/components', 'Signals/events exchanged', 'Trigger(s) and sequencing', 'Ownership/authority (who decides)', 'Loop/state transitions', 'At least one failure path'],
  CODE_FLOW_ANALYSIS: ['Entry point(s)', 'Call chain or step-by-step execution', 'Key functions/modules involved', 'Conditions/branches that matter'],
  REPO_ORIENTATION: ['Major modules/dirs', 'Likely entry points', '"Where to look next" guidance'],
  CHANGE_IMPLEMENTATION: ['Concrete change plan', 'Impacted files/modules (if known)', 'Test impact / validation plan', 'Risks/rollback note'],
  DEBUG_AND_DIAGNOSE: ['Ranked hypotheses', 'What evidence would confirm/refute', 'Next experiments'],
};

/** Reason codes and intents: upper snake case, like the built-in ones (they are enums, §9.10). */
export const CODE_RE = /^[A-Z][A-Z0-9_]{1,63}$/;
