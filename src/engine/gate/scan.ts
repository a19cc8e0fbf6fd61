/**
 * Tier-1 scanning before any LLM call (gate spec §1–§2, docs/gate.md "Output scanning"): the default
 * detectors (card numbers with a Luhn check, SSNs, credentials/keys — the DSL's entity detectors), the
 * safety patterns and keyword blocklists, and the blueprint's tier-1 guardrails. Anything that cannot be
 * scanned completely (too large, too deep, a condition that throws) is a hit: fail closed.
 *
 * What an agent is held to comes from the registry, never from the trace (spec-decisions D44): the tier-1
 * guardrails whose `skills:` the registry lists for the agent and the patterns of every such skill, whatever
 * `skill_id` the trace names — an agent listed for a strict and a lax skill once named the lax one to dodge
 * the strict one's hard-safety rules.
 */
import { ENTITY_DETECTORS } from '../dsl/index.js';
import type { AgentInfo, EvalContext, Trace } from '../types.js';
import { blocklistHits } from './keywords.js';
import type { CompiledGate, GateHit, GatePattern, GateRuntimeLimits, GuardrailHook, Tier1Rule } from './types.js';

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
  trustDebt?: number;
  eventId?: string;
}

/**
 * The hard-safety rules one agent is held to (D44): the base settings' and every registry-listed skill's
 * safety patterns and keyword blocklist (a union; a skill's settings repeat the base's, so duplicates are
 * dropped), and the tier-1 guardrails per hook — unfiltered ones and those with a `skills:` the registry
 * lists for the agent. The trace's `skill_id` plays no part.
 */
export interface Tier1Scope {
  safetyPatterns: readonly GatePattern[];
  keywordBlocklist: readonly GatePattern[];
  rules: Readonly<Record<GuardrailHook, readonly Tier1Rule[]>>;
}

function uniquePatterns(lists: readonly (readonly GatePattern[])[]): GatePattern[] {
  const seen = new Set<string>();
  const out: GatePattern[] = [];
  for (const l of lists)
    for (const p of l) {
      const k = `${p.id}\u0000${p.source}`;
      if (seen.has(k)) continue;
      seen.add(k);
      out.push(p);
    }
  return out;
}

function buildScope(gate: CompiledGate, skills: readonly string[]): Tier1Scope {
  const sets = [gate.settings, ...skills.filter((s) => Object.hasOwn(gate.skills, s)).map((s) => gate.skills[s]!)];
  const held = gate.tier1.filter((r) => !r.skills || r.skills.some((s) => skills.includes(s)));
  return {
    safetyPatterns: uniquePatterns(sets.map((s) => s.safetyPatterns)),
    keywordBlocklist: uniquePatterns(sets.map((s) => s.keywordBlocklist)),
    rules: { final_answer: held.filter((r) => r.appliesTo.includes('final_answer')), tool_call: held.filter((r) => r.appliesTo.includes('tool_call')) },
  };
}

/**
 * Scopes per compiled gate, per registry skill list: the registry hands out one frozen agent object (and one
 * skills array) per agent, so the union is built once per agent and blueprint, not per event. A skills array
 * the cache has not seen (a test's literal) is one more build; nothing depends on identity for correctness.
 */
const scopes = new WeakMap<CompiledGate, { base?: Tier1Scope; bySkills: WeakMap<readonly string[], Tier1Scope> }>();

/** What tier 1 holds `agentSkills` (the registry's list for the agent) to under `gate` (D44). */
export function tier1Scope(gate: CompiledGate, agentSkills: readonly string[] | undefined): Tier1Scope {
  let c = scopes.get(gate);
  if (!c) scopes.set(gate, (c = { bySkills: new WeakMap() }));
  if (!agentSkills || agentSkills.length === 0) return (c.base ??= buildScope(gate, []));
  let s = c.bySkills.get(agentSkills);
  if (!s) c.bySkills.set(agentSkills, (s = buildScope(gate, agentSkills)));
  return s;
}

function evalContext(c: ScanContext, trace: Trace): EvalContext {
  return { trace, agent: c.agent, trustDebt: c.trustDebt ?? 0, nowMs: c.nowMs, stateNamespace: `${c.agent.tenant}:${c.agent.id}`, eventId: c.eventId };
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

/** Scans the draft of a final answer against the agent's tier-1 scope (tier1Scope). Returns every hit (empty = clean). */
export function scanDraft(draft: string, c: ScanContext, scope: Tier1Scope, limits: Pick<GateRuntimeLimits, 'maxScanChars'>): GateHit[] {
  if (draft.length > limits.maxScanChars)
    return [{ kind: 'scan_limit', id: 'max_scan_chars', message: `the draft has ${draft.length} characters, over the scan limit of ${limits.maxScanChars}: not delivered unscanned` }];
  const hits: GateHit[] = [];
  for (const d of DEFAULT_DETECTORS) if (d.test(draft)) hits.push({ kind: 'default', id: d.id, message: `the draft contains ${d.message}` });
  for (const p of scope.safetyPatterns) if (p.test(draft)) hits.push({ kind: 'safety_pattern', id: p.id, message: p.message });
  // However the draft spaces or hides a phrase (D47): keywords.ts. A draft whose folded reading outgrows the limit fails closed.
  const keywords = blocklistHits(draft, scope.keywordBlocklist, limits.maxScanChars);
  if (keywords === undefined) hits.push({ kind: 'scan_limit', id: 'max_scan_chars', message: `the draft read in its compatibility forms is over the scan limit of ${limits.maxScanChars} characters: not delivered unscanned` });
  else for (const k of keywords) hits.push({ kind: 'keyword', id: k.id, message: k.message });
  const trace = draftView(c.trace, draft);
  const ctx = evalContext(c, trace);
  for (const r of scope.rules.final_answer) {
    if (!r.when(trace)) continue;
    const p = r.patterns.find((x) => x.test(draft));
    if (p) hits.push({ kind: 'tier1', id: r.id, message: p.message });
    else {
      const h = conditionHit(r, ctx);
      if (h) hits.push(h);
    }
  }
  return hits;
}

/**
 * The strings of a tool call's payload — string leaves and object keys (a key is text the tool reads too:
 * `{"DROP TABLE users": true}`) — bounded; `undefined` when the bounds were exceeded. Keys count as leaves.
 */
export function stringLeaves(v: unknown, limits: Pick<GateRuntimeLimits, 'maxScanDepth' | 'maxScanLeaves' | 'maxScanChars'>): string[] | undefined {
  const out: string[] = [];
  let chars = 0;
  const add = (s: string): boolean => {
    out.push(s);
    chars += s.length;
    return out.length <= limits.maxScanLeaves && chars <= limits.maxScanChars;
  };
  const walk = (x: unknown, depth: number): boolean => {
    if (typeof x === 'string') return add(x);
    if (x === null || typeof x !== 'object') return true;
    if (depth >= limits.maxScanDepth) return false;
    if (Array.isArray(x)) {
      for (const y of x) if (!walk(y, depth + 1)) return false;
      return true;
    }
    for (const [k, y] of Object.entries(x as Record<string, unknown>)) if (!add(k) || !walk(y, depth + 1)) return false;
    return true;
  };
  return walk(v, 0) ? out : undefined;
}

/**
 * The pre-tool gate's tier-1 part: the rules that apply to tool calls, on the call's trace; patterns over what the
 * tool is handed — `args`, the C1 `action` object (where the demo agent puts its SQL) and `content` (D47).
 */
export function scanToolCall(c: ScanContext, scope: Tier1Scope, limits: Pick<GateRuntimeLimits, 'maxScanDepth' | 'maxScanLeaves' | 'maxScanChars'>): GateHit[] {
  const rules = scope.rules.tool_call.filter((r) => r.when(c.trace));
  if (rules.length === 0) return [];
  const hits: GateHit[] = [];
  const needLeaves = rules.some((r) => r.patterns.length > 0);
  const leaves = needLeaves ? stringLeaves([c.trace.args ?? {}, c.trace.action ?? {}, c.trace.content ?? ''], limits) : [];
  if (leaves === undefined) return [{ kind: 'scan_limit', id: 'args', message: 'the tool call (args, action, content) exceeds the scan limits (depth, leaves or size): blocked unscanned' }];
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
