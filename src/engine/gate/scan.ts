/**
 * Tier-1 scanning before any LLM call (gate spec §1–§2, docs/gate.md "Output scanning"): the default
 * detectors (card numbers with a Luhn check, SSNs, credentials/keys — the DSL's entity detectors), the
 * skill's safety patterns and keyword blocklist, and the blueprint's tier-1 guardrails. Anything that
 * cannot be scanned completely (too large, too deep, a condition that throws) is a hit: fail closed.
 */
import { ENTITY_DETECTORS } from '../dsl/index.js';
import type { AgentInfo, EvalContext, Trace } from '../types.js';
import type { GateHit, GateRuntimeLimits, GateSettings, GuardrailHook, Tier1Rule } from './types.js';

/** The default detectors that always run on the draft; a blueprint adds to them, never replaces them. */
export const DEFAULT_DETECTORS: readonly { id: string; message: string; test: (s: string) => boolean }[] = [
  { id: 'credit_card', message: 'a payment card number (Luhn-valid)', test: ENTITY_DETECTORS.credit_card },
  { id: 'ssn', message: 'a US social security number', test: ENTITY_DETECTORS.ssn },
  { id: 'secret', message: 'a credential, key or token', test: ENTITY_DETECTORS.secret },
];

export interface ScanContext {
  trace: Trace;
  agent: AgentInfo;
  nowMs: number;
  /** The skill whose settings apply (registry-checked), for `skills:` filters of guardrails. */
  skillId: string | null;
  trustDebt?: number;
  eventId?: string;
}

function evalContext(c: ScanContext, trace: Trace): EvalContext {
  return { trace, agent: c.agent, trustDebt: c.trustDebt ?? 0, nowMs: c.nowMs, stateNamespace: `${c.agent.tenant}:${c.agent.id}`, eventId: c.eventId };
}

function applies(rule: Tier1Rule, hook: GuardrailHook, trace: Trace, skillId: string | null): boolean {
  if (!rule.appliesTo.includes(hook)) return false;
  if (rule.skills && (skillId === null || !rule.skills.includes(skillId))) return false;
  return rule.when(trace);
}

/** A tier-1 condition is an invariant: false (or an error: fail closed) is a violation. Stateless by load-time rule. */
function conditionHit(rule: Tier1Rule, ctx: EvalContext): GateHit | undefined {
  if (!rule.condition) return undefined;
  try {
    const ok = rule.condition.evaluate(ctx);
    // Async conditions are rejected at load; a Promise here would mean a stateful call slipped through.
    if (ok === true) return undefined;
    if (ok === false) return { kind: 'tier1', id: rule.id, message: rule.message };
    return { kind: 'tier1', id: rule.id, message: `${rule.message} (condition could not be evaluated synchronously: fail closed)` };
  } catch (e) {
    return { kind: 'tier1', id: rule.id, message: `${rule.message} (condition could not be evaluated: ${(e as Error).message}; fail closed)` };
  }
}

/**
 * The final answer as tier-1 rules see it: the draft is its `content` and its `draft_answer`, whatever the agent
 * put in those fields besides (spec-decisions "Finalization gate", §1). The gate decides on the answer it would
 * deliver: a harmless `content` next to the draft once hid the draft from every condition (`content: "ok"` beside
 * a `draft_answer` promising a refund passed). Conditions and `when` read this view, so one rule serves output
 * and final_answer traces.
 */
export function draftView(trace: Trace, draft: string): Trace {
  return { ...trace, content: draft, draft_answer: draft };
}

/** Scans the draft of a final answer. Returns every hit (empty = clean). */
export function scanDraft(draft: string, c: ScanContext, settings: GateSettings, tier1: readonly Tier1Rule[], limits: Pick<GateRuntimeLimits, 'maxScanChars'>): GateHit[] {
  if (draft.length > limits.maxScanChars)
    return [{ kind: 'scan_limit', id: 'max_scan_chars', message: `the draft has ${draft.length} characters, over the scan limit of ${limits.maxScanChars}: not delivered unscanned` }];
  const hits: GateHit[] = [];
  for (const d of DEFAULT_DETECTORS) if (d.test(draft)) hits.push({ kind: 'default', id: d.id, message: `the draft contains ${d.message}` });
  for (const p of settings.safetyPatterns) if (p.test(draft)) hits.push({ kind: 'safety_pattern', id: p.id, message: p.message });
  for (const k of settings.keywordBlocklist) if (k.test(draft)) hits.push({ kind: 'keyword', id: k.id, message: k.message });
  const trace = draftView(c.trace, draft);
  const ctx = evalContext(c, trace);
  for (const r of tier1) {
    if (!applies(r, 'final_answer', trace, c.skillId)) continue;
    const p = r.patterns.find((x) => x.test(draft));
    if (p) hits.push({ kind: 'tier1', id: r.id, message: p.message });
    else {
      const h = conditionHit(r, ctx);
      if (h) hits.push(h);
    }
  }
  return hits;
}

/** String leaves of `args` (and `content`), bounded; `undefined` when the bounds were exceeded. */
export function stringLeaves(v: unknown, limits: Pick<GateRuntimeLimits, 'maxScanDepth' | 'maxScanLeaves' | 'maxScanChars'>): string[] | undefined {
  const out: string[] = [];
  let chars = 0;
  const walk = (x: unknown, depth: number): boolean => {
    if (typeof x === 'string') {
      out.push(x);
      chars += x.length;
      return out.length <= limits.maxScanLeaves && chars <= limits.maxScanChars;
    }
    if (x === null || typeof x !== 'object') return true;
    if (depth >= limits.maxScanDepth) return false;
    const vals = Array.isArray(x) ? x : Object.values(x as Record<string, unknown>);
    for (const y of vals) if (!walk(y, depth + 1)) return false;
    return true;
  };
  return walk(v, 0) ? out : undefined;
}

/** The pre-tool gate's tier-1 part: the rules that apply to tool calls, on the call's trace and `args`. */
export function scanToolCall(c: ScanContext, tier1: readonly Tier1Rule[], limits: Pick<GateRuntimeLimits, 'maxScanDepth' | 'maxScanLeaves' | 'maxScanChars'>): GateHit[] {
  const rules = tier1.filter((r) => applies(r, 'tool_call', c.trace, c.skillId));
  if (rules.length === 0) return [];
  const hits: GateHit[] = [];
  const needLeaves = rules.some((r) => r.patterns.length > 0);
  const leaves = needLeaves ? stringLeaves([c.trace.args ?? {}, c.trace.content ?? ''], limits) : [];
  if (leaves === undefined) return [{ kind: 'scan_limit', id: 'args', message: 'tool-call arguments exceed the scan limits (depth, leaves or size): blocked unscanned' }];
  const ctx = evalContext(c, c.trace);
  for (const r of rules) {
    const p = r.patterns.find((x) => leaves.some((s) => x.test(s)));
    if (p) hits.push({ kind: 'tier1', id: r.id, message: p.message });
    else {
      const h = conditionHit(r, ctx);
      if (h) hits.push(h);
    }
  }
  return hits;
}
