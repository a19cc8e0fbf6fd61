/**
 * From findings to the gate's answer (docs/gate.md "Verdict and action"; spec-decisions D16, D17, D20, D21):
 * Steward's own verdict from the strictness thresholds and the reason codes, the fix mode with the §9.12
 * table's definite rows applied, the action, the anti-loop rule, the directive, the intervention and what
 * the trust-debt stage needs. Pure functions; the facade (finalization-gate.ts) strings them together.
 */
import type { Intervention } from '../types.js';
import type { TrustDebtEvent } from '../trust-debt/store.js';
import { HARD_FAIL_CODES, STRICTNESS, type FixMode, type GateAction, type GateVerdict, type Strictness } from './codes.js';
import { blockDirective, blockedEndingDirective, heldDirective, limitationsDirective, replanDirective } from './prompts.js';
import { StewardError } from '../../errors.js';
import type { GateJobState, GateSettings, GateTrustDebt, OnJudgeError } from './types.js';

/** D16: PASS / PASS_WITH_CAVEATS lower bounds by strictness; hard-fail codes (plus high's two) make it FAIL. */
export function computeVerdict(score: number, codes: readonly string[], strictness: Strictness, customHardFail: readonly string[]): GateVerdict {
  const t = STRICTNESS[strictness];
  const hard = new Set<string>([...HARD_FAIL_CODES, ...t.extraHardFail, ...customHardFail]);
  if (codes.some((c) => hard.has(c))) return 'FAIL';
  if (score >= t.pass) return 'PASS';
  if (score >= t.caveats) return 'PASS_WITH_CAVEATS';
  return 'FAIL';
}

/**
 * D21: where the §9.12 table is definite it overrides the judge — UNSUPPORTED_SPECIFICS needs new evidence,
 * NEEDS_CLARIFICATION needs the user. When both appear, asking the user comes first ("do not proceed").
 */
export function effectiveFixMode(judge: FixMode, codes: readonly string[]): FixMode {
  if (codes.includes('NEEDS_CLARIFICATION')) return 'NEEDS_USER_CLARIFICATION';
  if (codes.includes('UNSUPPORTED_SPECIFICS')) return 'NEEDS_NEW_EVIDENCE';
  return judge;
}

/** D17: verdict × fix mode → action, before the anti-loop rule. */
export function actionFor(verdict: GateVerdict, fixMode: FixMode): GateAction {
  if (verdict === 'PASS') return 'finalize';
  if (verdict === 'PASS_WITH_CAVEATS') return fixMode === 'REWRITE_ONLY' ? 'rewrite' : 'replan';
  return fixMode === 'NEEDS_USER_CLARIFICATION' ? 'ask_user' : 'replan';
}

export interface AttemptShape {
  abstraction_level: string | null;
  artifact_type: string | null;
  clarification: string | null;
}

/**
 * D17/D21 anti-loop: a repair action becomes finalize_with_limitations at attempt_index ≥ max_retries, or when
 * an attempt ≥ 1 changes none of abstraction level, artifact type, evidence (a tool call that ran since the
 * previous attempt) and clarification (counted only after an ask_user of this job).
 */
export function antiLoop(attemptIndex: number, maxRetries: number, state: GateJobState | undefined, now: AttemptShape): 'max_retries' | 'no_difference' | null {
  if (attemptIndex >= maxRetries) return 'max_retries';
  if (attemptIndex === 0 || !state) return null;
  const prev = state.attempts.at(-1);
  if (!prev) return null;
  const differs =
    (now.abstraction_level ?? null) !== (prev.abstraction_level ?? null) ||
    (now.artifact_type ?? null) !== (prev.artifact_type ?? null) ||
    state.evidence_count > prev.evidence ||
    (state.asked_user && !!now.clarification && now.clarification !== prev.clarification);
  return differs ? null : 'no_difference';
}

/**
 * D45: how an anti-loop ending ends. §9.7/§9.12 say "finalize with explicit limitations", which delivers the draft
 * (intervention flag, approved). That is right for an alignment miss (far away, but nothing forbidden in it); a draft
 * that still fails hard safety or policy (SAFETY_OR_POLICY_VIOLATION, a custom code the blueprint marks hard_fail)
 * or skipped a required workflow step must not be delivered because the agent stopped changing it — §1 wants those
 * tiers enforced every time — so the job ends blocked instead.
 */
export function antiLoopEnding(codes: readonly string[], customHardFail: readonly string[], workflowMiss: boolean): 'block' | 'finalize_with_limitations' {
  if (workflowMiss || codes.includes('SAFETY_OR_POLICY_VIOLATION') || codes.some((c) => customHardFail.includes(c))) return 'block';
  return 'finalize_with_limitations';
}

const REPAIR: ReadonlySet<GateAction> = new Set(['rewrite', 'replan', 'ask_user']);
export const isRepair = (a: GateAction): boolean => REPAIR.has(a);

/** Contracts C5 (docs/gate.md): PASS → ok, PASS_WITH_CAVEATS → nudge, FAIL → block; finalize_with_limitations → flag. */
export function interventionFor(verdict: GateVerdict | null, action: GateAction): Intervention {
  if (action === 'block') return 'block';
  if (action === 'finalize_with_limitations') return 'flag';
  if (verdict === 'PASS') return 'ok';
  if (verdict === 'PASS_WITH_CAVEATS') return 'nudge';
  return 'block';
}

/** D21 trust debt: repairs and degraded outcomes add none; limitations weigh as flag; a tier-1 hit as block at critical severity. */
export function trustDebtFor(action: GateAction, intervention: Intervention, opts: { tier1: boolean; degraded: boolean }): GateTrustDebt {
  if (opts.tier1) return { intervention: 'block', severity: 'critical', no_debt: false };
  return { intervention, severity: 'standard', no_debt: opts.degraded || isRepair(action) };
}

/** The judge result as the trust-debt stage reads it from acgp.gate (the gate stage adds `trust_debt` and `blueprint`). */
export interface JudgedDebtInput {
  event_id: unknown;
  trace_id: unknown;
  agent_id: unknown;
  tenant?: unknown;
  ts_ms?: unknown;
  trust_debt?: GateTrustDebt;
}

/**
 * The trust-debt event of a gate answer (D21), or undefined when it moves none (a repair loop, a degraded outcome).
 * One function for the trust-debt stage and `steward eval` (spec-decisions D50), so both apply the same event id
 * (`fajr:<event id>`), time, intervention and severity: a tier-1 hit is block at critical severity.
 */
export function gateDebtEvent(g: JudgedDebtInput, tenantOf: (agentId: string) => string, fallbackAtMs: number): TrustDebtEvent | undefined {
  if (!g.trust_debt || g.trust_debt.no_debt) return undefined;
  if (typeof g.event_id !== 'string' || typeof g.agent_id !== 'string' || typeof g.trace_id !== 'string') throw new StewardError('STEWARD_TRACE_SCHEMA', 'gate event lacks event_id/trace_id/agent_id');
  const severity = g.trust_debt.severity === 'critical' ? 'critical' : undefined;
  const tenant = typeof g.tenant === 'string' && g.tenant !== '' ? g.tenant : tenantOf(g.agent_id);
  return { eventId: g.event_id, tenant, agentId: g.agent_id, atMs: typeof g.ts_ms === 'number' ? g.ts_ms : fallbackAtMs, kind: 'intervention', intervention: g.trust_debt.intervention, severity };
}

/** What `on_judge_error` gives (D20/D21: always degraded, so no trust debt). */
export function onJudgeErrorOutcome(mode: OnJudgeError): { action: GateAction; intervention: Intervention } {
  switch (mode) {
    case 'block':
      return { action: 'block', intervention: 'block' };
    case 'finalize_with_limitations':
      return { action: 'finalize_with_limitations', intervention: 'flag' };
    case 'finalize':
      return { action: 'finalize', intervention: 'ok' };
    default:
      // The answer is held (not delivered) while a human decides.
      return { action: 'block', intervention: 'escalate' };
  }
}

export function directiveFor(action: GateAction, d: { reasonCodes: readonly string[]; missing: readonly string[]; fixMode: FixMode | null; style: readonly string[]; blockReasons: readonly string[]; judgeError?: string; antiLoop?: 'max_retries' | 'no_difference' | null }): string | null {
  if (action === 'finalize') return null;
  if (action === 'block') {
    if (d.judgeError !== undefined) return heldDirective(d.judgeError);
    return d.antiLoop ? blockedEndingDirective({ reasonCodes: d.reasonCodes, missing: d.missing, why: d.antiLoop }) : blockDirective(d.blockReasons);
  }
  if (action === 'finalize_with_limitations') return limitationsDirective({ reasonCodes: d.reasonCodes, missing: d.missing, style: d.style });
  // rewrite / replan / ask_user: the fix mode names which branch of the template applies.
  const fixMode: FixMode = d.fixMode ?? (action === 'rewrite' ? 'REWRITE_ONLY' : action === 'ask_user' ? 'NEEDS_USER_CLARIFICATION' : 'NEEDS_NEW_EVIDENCE');
  return replanDirective({ reasonCodes: d.reasonCodes, missing: d.missing, fixMode, style: d.style });
}

/** The settings that apply: a skill's only when the registry lists that skill for the agent (D21). */
export function settingsFor(gate: { settings: GateSettings; skills: Record<string, GateSettings> }, skillId: unknown, agentSkills: readonly string[] | undefined): { settings: GateSettings; skillId: string | null } {
  if (typeof skillId !== 'string' || !agentSkills?.includes(skillId)) return { settings: gate.settings, skillId: null };
  return { settings: Object.hasOwn(gate.skills, skillId) ? gate.skills[skillId]! : gate.settings, skillId };
}
