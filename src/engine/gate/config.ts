/**
 * Compiles `finalization_gate:` and `guardrails:` (docs/gate.md). Per file (with that file's positions):
 * tier-1 conditions and every RE2 pattern, and the tier rules — a tier-1 rule must be mechanical (a DSL
 * condition or RE2 patterns), not prose. On the resolved blueprint: the effective settings per skill and
 * the workflow complexity limits of gate spec §11, which count inherited workflows too.
 */
import { RE2JS } from 're2js';
import { StewardError } from '../../errors.js';
import { compileConditionAt, compileWhenAt, type DslOptions } from '../blueprint/conditions.js';
import type { PathSeg, SourceDoc } from '../blueprint/source.js';
import type { AgentInfo, CompiledBlueprint } from '../types.js';
import { BUILTIN_INTENTS, BUILTIN_REASON_CODES, type PromptId, type Strictness } from './codes.js';
import { keywordPattern, keywordWords } from './keywords.js';
import { mergeSettings } from './merge-config.js';
import {
  DEFAULT_GATE_LOAD_LIMITS,
  type CompiledGate,
  type CustomReasonCode,
  type GateLoadLimits,
  type GatePattern,
  type GateSettings,
  type Guardrail,
  type GuardrailHook,
  type OnJudgeError,
  type Tier1Rule,
  type Workflow,
} from './types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strs = (v: unknown): string[] => arr(v).filter((s): s is string => typeof s === 'string');

export const DEFAULT_GATE_SETTINGS: GateSettings = Object.freeze({
  enabled: true,
  maxRetries: 2,
  strictness: 'medium',
  prompt: 'A',
  customReasonCodes: [],
  intents: {},
  safetyPatterns: [],
  keywordBlocklist: [],
  onJudgeError: 'escalate',
}) as GateSettings;

function re2(source: string): RE2JS | string {
  try {
    return RE2JS.compile(source);
  } catch (e) {
    return (e as Error).message;
  }
}

/** A pattern entry (`"regex"` or `{pattern, id?, message?}`) → GatePattern; undefined (and an error when `doc`) if RE2 rejects it. */
function compilePattern(entry: unknown, fallbackId: string, what: string, at?: { doc: SourceDoc; path: PathSeg[]; errors: StewardError[]; exact?: boolean }): GatePattern | undefined {
  const o = isObj(entry) ? entry : { pattern: entry };
  if (typeof o.pattern !== 'string') return undefined;
  const re = re2(o.pattern);
  if (typeof re === 'string') {
    at?.errors.push(new StewardError('STEWARD_DSL_REGEX', `invalid regular expression (RE2 syntax): ${re}`, { position: at.doc.pos(isObj(entry) && !at.exact ? [...at.path, 'pattern'] : at.path) }));
    return undefined;
  }
  const id = typeof o.id === 'string' ? o.id : fallbackId;
  return { id, source: o.pattern, message: typeof o.message === 'string' ? o.message : `${what} '${id}' matched`, test: (s) => re.test(s) };
}

function settingsFrom(o: Obj): GateSettings {
  const codes: CustomReasonCode[] = [];
  const seen = new Set<string>();
  for (const c of arr(o.custom_reason_codes)) {
    const code = typeof c === 'string' ? c : isObj(c) && typeof c.code === 'string' ? c.code : undefined;
    if (!code || seen.has(code)) continue;
    seen.add(code);
    codes.push({ code, hardFail: isObj(c) && c.hard_fail === true });
  }
  const intents: Record<string, string[]> = {};
  if (isObj(o.intents)) for (const [id, v] of Object.entries(o.intents)) if (isObj(v)) intents[id] = strs(v.required_elements);
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  return {
    enabled: typeof o.enabled === 'boolean' ? o.enabled : DEFAULT_GATE_SETTINGS.enabled,
    maxRetries: num(o.max_retries) ?? DEFAULT_GATE_SETTINGS.maxRetries,
    strictness: (['low', 'medium', 'high'].includes(o.strictness as string) ? o.strictness : 'medium') as Strictness,
    prompt: (['A', 'B', 'lite'].includes(o.prompt as string) ? o.prompt : 'A') as PromptId,
    ...(typeof o.model === 'string' && { model: o.model }),
    ...(num(o.judge_timeout_ms) !== undefined && { judgeTimeoutMs: num(o.judge_timeout_ms) }),
    customReasonCodes: codes,
    intents,
    safetyPatterns: arr(o.safety_patterns).flatMap((p, i) => compilePattern(p, `safety_patterns[${i}]`, 'safety pattern') ?? []),
    keywordBlocklist: [...new Set(strs(o.keyword_blocklist))].flatMap((k) => keywordPattern(k) ?? []),
    onJudgeError: (['escalate', 'block', 'finalize_with_limitations', 'finalize'].includes(o.on_judge_error as string) ? o.on_judge_error : 'escalate') as OnJudgeError,
  };
}

/** Problems of this file's own `finalization_gate` (RE2 patterns, built-in names reused), at their positions. */
export function gateFileChecks(doc: SourceDoc, v: Obj, errors: StewardError[]): void {
  const g = v.finalization_gate;
  if (!isObj(g)) return;
  const check = (o: Obj, base: PathSeg[]) => {
    arr(o.safety_patterns).forEach((p, i) => compilePattern(p, '', '', { doc, path: [...base, 'safety_patterns', i], errors }));
    // An entry of only spaces or invisible characters has no words to find (D47); as a literal it hit every draft with a space.
    arr(o.keyword_blocklist).forEach((k, i) => {
      if (typeof k === 'string' && k !== '' && keywordWords(k).length === 0)
        errors.push(new StewardError('STEWARD_GATE_CONFIG', `keyword_blocklist entry ${JSON.stringify(k)} has no words (only spaces or invisible characters)`, { position: doc.pos([...base, 'keyword_blocklist', i]) }));
    });
    // The prompts' built-in lists stay verbatim (docs/gate.md): a built-in name cannot be redefined, only added to.
    if (isObj(o.intents))
      for (const id of Object.keys(o.intents))
        if (Object.hasOwn(BUILTIN_INTENTS, id))
          errors.push(new StewardError('STEWARD_GATE_CONFIG', `intent '${id}' is built in (gate spec §9.4); custom intents need a new name`, { position: doc.pos([...base, 'intents', id], { key: true }) }));
    arr(o.custom_reason_codes).forEach((c, i) => {
      const code = typeof c === 'string' ? c : isObj(c) ? c.code : undefined;
      if (typeof code === 'string' && BUILTIN_REASON_CODES.includes(code))
        errors.push(new StewardError('STEWARD_GATE_CONFIG', `reason code '${code}' is built in (gate spec §9.3); custom codes need a new name`, { position: doc.pos([...base, 'custom_reason_codes', i]) }));
    });
  };
  check(g, ['finalization_gate']);
  if (isObj(g.skills)) for (const [id, s] of Object.entries(g.skills)) if (isObj(s)) check(s, ['finalization_gate', 'skills', id]);
}

const HOOKS: readonly GuardrailHook[] = ['final_answer', 'tool_call'];

/** This file's own guardrails, compiled; inherited ones were compiled with their own file. */
export function compileOwnGuardrails(doc: SourceDoc, v: Obj, dsl: DslOptions, errors: StewardError[]): Guardrail[] {
  const out: Guardrail[] = [];
  arr(v.guardrails).forEach((g, i) => {
    if (!isObj(g) || typeof g.id !== 'string') return; // the schema reported it
    const at = (...p: PathSeg[]) => doc.pos(['guardrails', i, ...p]);
    const base = {
      id: g.id,
      ...(typeof g.description === 'string' && { description: g.description }),
      when: compileWhenAt(g.when),
      ...(Array.isArray(g.skills) && { skills: strs(g.skills) }),
      position: at(),
    };
    const mechanical = g.condition !== undefined || g.pattern !== undefined || g.patterns !== undefined;
    // Mechanical in effect (D47): a condition or at least one pattern. `patterns: []` alone enforced nothing and passed.
    const enforces = g.condition !== undefined || g.pattern !== undefined || (Array.isArray(g.patterns) ? g.patterns.length > 0 : g.patterns !== undefined);
    const err = (code: 'STEWARD_GATE_CONFIG' | 'STEWARD_GATE_NOT_MECHANICAL', msg: string, ...p: PathSeg[]) => errors.push(new StewardError(code, `guardrail '${g.id}': ${msg}`, { position: at(...p) }));
    if (g.tier === 1) {
      if (!enforces) {
        const empty = mechanical ? ' (`patterns: []` lists none: the rule would enforce nothing)' : '';
        err('STEWARD_GATE_NOT_MECHANICAL', `a tier-1 (hard safety) rule must be mechanical: give a DSL \`condition\` or RE2 \`pattern\`/\`patterns\`${empty} (prose belongs in tier 3, as style guidance)`, ...(mechanical ? ['patterns'] : g.text !== undefined ? ['text'] : []));
        return;
      }
      if (g.workflow !== undefined) err('STEWARD_GATE_CONFIG', 'a workflow is tier 2, not tier 1', 'workflow');
      let condition;
      if (g.condition !== undefined) {
        condition = compileConditionAt(doc, ['guardrails', i, 'condition'], g.condition, dsl, errors);
        // Mechanical means decided from the trace alone: the pre-tool gate and the gate hold no rate or storage state.
        if (condition?.async) err('STEWARD_GATE_NOT_MECHANICAL', `tier-1 conditions must be stateless (uses ${[...condition.functions].join(', ')}); put stateful limits in tripwires`, 'condition');
        if (!condition || condition.async) return;
      }
      const patterns: GatePattern[] = [];
      const msg = typeof g.message === 'string' ? g.message : (base.description ?? `tier-1 guardrail '${g.id}' violated`);
      if (typeof g.pattern === 'string') {
        const p = compilePattern({ pattern: g.pattern, id: g.id, message: msg }, g.id, 'tier-1 pattern', { doc, path: ['guardrails', i, 'pattern'], errors, exact: true });
        if (p) patterns.push({ ...p, source: g.pattern });
      }
      arr(g.patterns).forEach((p, j) => {
        const c = compilePattern(isObj(p) ? { message: msg, ...p } : { pattern: p, message: msg }, `${g.id}[${j}]`, 'tier-1 pattern', { doc, path: ['guardrails', i, 'patterns', j], errors, exact: !isObj(p) });
        if (c) patterns.push(c);
      });
      const appliesTo = Array.isArray(g.applies_to) ? HOOKS.filter((h) => (g.applies_to as unknown[]).includes(h)) : HOOKS;
      const rule: Tier1Rule = { ...base, tier: 1, appliesTo, patterns, message: msg, ...(condition && { condition }) };
      out.push(rule);
    } else if (g.tier === 2) {
      if (!isObj(g.workflow)) {
        err('STEWARD_GATE_CONFIG', 'a tier-2 (process) guardrail needs `workflow: {steps: [...]}`');
        return;
      }
      if (mechanical) err('STEWARD_GATE_CONFIG', 'conditions and patterns are tier 1; a tier-2 guardrail is a workflow');
      out.push({ ...base, tier: 2, steps: strs(g.workflow.steps), required: g.workflow.required !== false, stepsPosition: at('workflow', 'steps') });
    } else if (g.tier === 3) {
      const text = typeof g.text === 'string' ? g.text : base.description;
      if (!text) err('STEWARD_GATE_CONFIG', 'a tier-3 (style) guardrail needs `text`');
      else if (mechanical || g.workflow !== undefined) err('STEWARD_GATE_CONFIG', 'tier 3 is soft guidance only; conditions and patterns are tier 1, workflows tier 2');
      else out.push({ ...base, tier: 3, text });
    }
  });
  return out;
}

/** Duplicate guardrail ids across the chain are errors, as for checks: a child cannot shadow a parent's rule. */
export function duplicateGuardrailProblems(docs: readonly { doc: SourceDoc; value: Obj; key: string }[]): StewardError[] {
  const seen = new Map<string, string>();
  const errs: StewardError[] = [];
  for (const d of docs)
    arr(d.value.guardrails).forEach((g, i) => {
      if (!isObj(g) || typeof g.id !== 'string') return;
      const prev = seen.get(g.id);
      if (prev !== undefined)
        errs.push(new StewardError('STEWARD_BLUEPRINT_DUPLICATE', `guardrail id '${g.id}' is already defined ${prev === d.key ? 'in this blueprint' : `by ${prev}`}`, { position: d.doc.pos(['guardrails', i, 'id']) }));
      else seen.set(g.id, d.key);
    });
  return errs;
}

/** Gate spec §11 limits over the resolved guardrails (inherited workflows count). */
export function workflowLimitProblems(guardrails: readonly Guardrail[], limits: GateLoadLimits = DEFAULT_GATE_LOAD_LIMITS): StewardError[] {
  const errs: StewardError[] = [];
  const workflows = guardrails.filter((g): g is Workflow => g.tier === 2);
  workflows.forEach((w, i) => {
    if (w.steps.length > limits.maxWorkflowSteps)
      errs.push(new StewardError('STEWARD_GATE_WORKFLOW_LIMIT', `workflow '${w.id}' has ${w.steps.length} steps; at most ${limits.maxWorkflowSteps} are allowed (gate spec §11)`, { position: w.stepsPosition ?? w.position }));
    if (i === limits.maxWorkflows)
      errs.push(new StewardError('STEWARD_GATE_WORKFLOW_LIMIT', `${workflows.length} workflows (inherited ones included); at most ${limits.maxWorkflows} are allowed (gate spec §11)`, { position: w.position }));
  });
  return errs;
}

/** The compiled gate of a resolved blueprint: `resolvedGate` is its merged `finalization_gate` block. */
export function assembleGate(resolvedGate: unknown, guardrails: readonly Guardrail[]): CompiledGate {
  const raw = isObj(resolvedGate) ? resolvedGate : {};
  const { skills: rawSkills, ...baseRaw } = raw;
  const skills: Record<string, GateSettings> = {};
  if (isObj(rawSkills)) for (const [id, o] of Object.entries(rawSkills)) if (isObj(o)) skills[id] = settingsFrom(mergeSettings(baseRaw, o));
  return {
    settings: settingsFrom(baseRaw),
    skills,
    tier1: guardrails.filter((g): g is Tier1Rule => g.tier === 1),
    workflows: guardrails.filter((g): g is Workflow => g.tier === 2),
    style: guardrails.filter((g): g is Extract<Guardrail, { tier: 3 }> => g.tier === 3),
  };
}

export const EMPTY_GATE: CompiledGate = Object.freeze({ settings: DEFAULT_GATE_SETTINGS, skills: {}, tier1: [], workflows: [], style: [] }) as CompiledGate;

/**
 * Warnings (gate spec §11): a workflow step naming a tool that no agent of the registry lists. Called by
 * the loader / `steward validate` when a registry is at hand; blueprints compile without one.
 */
export function workflowToolWarnings(blueprints: Iterable<CompiledBlueprint>, agents: Iterable<AgentInfo>): StewardError[] {
  const known = new Set<string>();
  for (const a of agents) for (const t of a.tools) known.add(t);
  const out: StewardError[] = [];
  const reported = new Set<string>();
  for (const bp of blueprints)
    for (const w of bp.gate?.workflows ?? [])
      w.steps.forEach((s) => {
        if (known.has(s)) return;
        const k = `${w.stepsPosition?.file}|${w.stepsPosition?.line}|${w.id}|${s}`;
        if (reported.has(k)) return;
        reported.add(k);
        out.push(new StewardError('STEWARD_GATE_UNKNOWN_TOOL', `workflow '${w.id}' step '${s}' names a tool that no agent in the registry lists`, { position: w.stepsPosition ?? w.position }));
      });
  return out;
}

/**
 * Checks and tripwires whose `when` names a gate hook (`final_answer`, `user_feedback`): they never run, in the
 * stream or in `steward eval`, since the gate alone answers those traces (spec-decisions D50). Found by asking the
 * compiled `when` about a bare trace of the hook and of a hook no blueprint names: one that matches the first only
 * names the gate hook (a `when` without `hook`, or with more conditions a bare trace lacks, is not reported).
 */
export function gateHookCheckWarnings(blueprints: Iterable<CompiledBlueprint>): StewardError[] {
  const bare = (hook: string) => ({ trace_id: 'validate', agent_id: 'validate', timestamp: '1970-01-01T00:00:00Z', hook });
  const other = bare('\u0000no-such-hook');
  const out: StewardError[] = [];
  const reported = new Set<string>();
  for (const bp of blueprints)
    for (const [kind, list] of [['tripwire', bp.tripwires], ['check', bp.rules], ['metric', bp.metrics]] as const)
      for (const c of list)
        for (const hook of ['final_answer', 'user_feedback']) {
          if (!c.when(bare(hook)) || c.when(other)) continue;
          const k = `${c.position?.file}|${c.position?.line}|${c.id}|${hook}`;
          if (reported.has(k)) continue;
          reported.add(k);
          out.push(new StewardError('STEWARD_GATE_HOOK_UNCHECKED', `${kind} '${c.id}' names hook ${hook}, which the finalization gate alone answers: it never runs on those traces (put final-answer rules in guardrails or finalization_gate safety settings)`, { position: c.position }));
        }
  return out;
}
