/**
 * Which skills hold a job at the gate (spec-decisions D44, D46; docs/gate.md "Blueprint blocks"). An agent never
 * chooses its own skill: the trace's `skill_id` may only add a skill the registry lists for the agent. Besides it,
 * every registry skill whose workflow the job engaged — it called the workflow's last step, the action the
 * workflow orders, whether the call ran or was refused — brings its judge settings (several skills: the strictest,
 * strictestSettings). The workflow itself is required only when that call ran: a refused one (out of order,
 * blocked, an approval denied) did nothing the steps must answer for, and a job that must say so can (the judge
 * decides). At tool-call time workflow.ts applies a skill's workflows to every agent the registry lists for it.
 */
import { severityRank } from '../intervention.js';
import { onJudgeErrorOutcome } from './decide.js';
import type { CompiledGate, CustomReasonCode, GateJobState, GateSettings, Workflow } from './types.js';
import { storedProgress } from './workflow.js';

export interface GateSkillScope {
  /** The judge settings that apply (the base when no skill does). */
  settings: GateSettings;
  /** The skill whose settings lead (reported as the outcome's `skill_id`); null: the base settings. */
  skillId: string | null;
  /** Every skill that applies (tier-3 style is filtered by them). */
  skills: readonly string[];
  /** The workflows tier 2 holds the job to: those without `skills:`, the named skill's, those whose last step ran. */
  workflows: readonly Workflow[];
}

/**
 * How the job stands with the last step of `w`: `ran` (a call of it ran, or the workflow is done), `refused` (it
 * was called and no call of it ran), or null (never called). Earlier steps engage nothing: a job that verified
 * identity and looked up an order never asked for the refund a [verify, lookup, refund] workflow orders.
 */
export function lastStepCall(w: Workflow, calls: GateJobState['tool_calls'], done: GateJobState['steps_done']): 'ran' | 'refused' | null {
  const last = w.steps[w.steps.length - 1];
  // steps_done keeps what ran beyond the kept calls; a refused call is in the kept calls only.
  if (storedProgress(w.steps, done) === w.steps.length || calls.some((c) => c.tool === last && !c.blocked)) return 'ran';
  return calls.some((c) => c.tool === last) ? 'refused' : null;
}

export function gateScope(gate: CompiledGate, traceSkill: unknown, registered: readonly string[] | undefined, state: GateJobState | undefined): GateSkillScope {
  const listed = registered ?? [];
  const named = typeof traceSkill === 'string' && listed.includes(traceSkill) ? traceSkill : null;
  const calls = state?.tool_calls ?? [];
  const skills = named ? [named] : [];
  const workflows: Workflow[] = [];
  for (const w of gate.workflows) {
    if (!w.skills) {
      workflows.push(w);
      continue;
    }
    const mine = w.skills.filter((s) => listed.includes(s));
    if (mine.length === 0) continue;
    const last = lastStepCall(w, calls, state?.steps_done);
    const isNamed = named !== null && mine.includes(named);
    if (!isNamed && last === null) continue;
    // Named, the workflow is required as before — unless the job's only calls of its last step were refused:
    // naming the skill then adds nothing to what the refusal brought (else a denied refund could never be told).
    if (last === 'ran' || (isNamed && last === null)) workflows.push(w);
    for (const s of mine) if (!skills.includes(s)) skills.push(s);
  }
  if (skills.length === 0) return { settings: gate.settings, skillId: null, skills, workflows };
  const { settings, skillId } = strictestSettings(gate, skills);
  return { settings, skillId, skills, workflows };
}

const STRICTNESS_RANK = { low: 0, medium: 1, high: 2 } as const;
const judgeErrorRank = (s: GateSettings) => severityRank(onJudgeErrorOutcome(s.onJudgeError).intervention);

/** Merged settings per gate and skill list (a handful of combinations; stable objects keep judgeSetup's cache). */
const merged = new WeakMap<CompiledGate, Map<string, { settings: GateSettings; skillId: string }>>();

/**
 * The strictest judge settings over `skills` (each its override, or the base): a judge when any asks for one; the
 * highest strictness; every custom reason code (hard-fail when any says so) and intent (required elements joined);
 * the most closed `on_judge_error`. The prompt, model, timeout and max_retries are the lead's — the first skill
 * (the named one first) with a judge and the highest strictness — and so is the reported `skill_id`.
 */
export function strictestSettings(gate: CompiledGate, skills: readonly string[]): { settings: GateSettings; skillId: string } {
  const of = (s: string) => (Object.hasOwn(gate.skills, s) ? gate.skills[s]! : gate.settings);
  if (skills.length === 1) return { settings: of(skills[0]!), skillId: skills[0]! };
  let byGate = merged.get(gate);
  if (!byGate) merged.set(gate, (byGate = new Map()));
  const k = JSON.stringify(skills);
  const hit = byGate.get(k);
  if (hit) return hit;
  const all = skills.map((s) => ({ s, g: of(s) }));
  let lead = all[0]!;
  for (const x of all) if (Number(x.g.enabled) * 10 + STRICTNESS_RANK[x.g.strictness] > Number(lead.g.enabled) * 10 + STRICTNESS_RANK[lead.g.strictness]) lead = x;
  const codes = new Map<string, CustomReasonCode>();
  const intents: Record<string, string[]> = {};
  for (const { g } of all) {
    for (const c of g.customReasonCodes) codes.set(c.code, { code: c.code, hardFail: c.hardFail || codes.get(c.code)?.hardFail === true });
    for (const [id, els] of Object.entries(g.intents)) intents[id] = [...new Set([...(intents[id] ?? []), ...els])];
  }
  const settings: GateSettings = {
    ...lead.g,
    enabled: all.some((x) => x.g.enabled),
    strictness: all.reduce((m, x) => (STRICTNESS_RANK[x.g.strictness] > STRICTNESS_RANK[m] ? x.g.strictness : m), lead.g.strictness),
    customReasonCodes: [...codes.values()],
    intents,
    onJudgeError: all.reduce((m, x) => (judgeErrorRank(x.g) > judgeErrorRank(m) ? x.g : m), lead.g).onJudgeError,
  };
  const out = { settings, skillId: lead.s };
  if (byGate.size < 256) byGate.set(k, out);
  return out;
}
