/**
 * The compile loop of one plain-language rule (gate spec §7, §8; docs/rules.md "Compile loop"):
 * translate (LLM → DSL or workflow), compile with the normal compiler (and the tool-schema type check),
 * ask for test cases, add the author's examples, run them all. Everything passes → `mechanical`; any
 * failure → `text` with the reason. Pure: the LLM comes in through `LlmClient`; only `steward
 * compile-rules` runs this — loaders read its result from the lock file.
 */
import { compileCondition, type DslCompileOptions } from '../dsl/index.js';
import type { AgentInfo, CompiledCondition, LlmClient, Trace } from '../types.js';
import { checkArgTypes } from './arg-types.js';
import { compiledFormHash, ruleTextHash } from './lock.js';
import { parseJsonAnswer, parseTests, RULES_SYSTEM, testsPrompt, translationPrompt } from './prompts.js';
import type { AuthoredRule, RuleLockEntry, RuleTest, ToolSchemas } from './types.js';

export interface CompileRuleDeps {
  llm: LlmClient;
  model?: string;
  dsl: DslCompileOptions;
  /** Imported tool input schemas (MCP): `args.*` of the rule's tool are type-checked against them. */
  tools?: ToolSchemas;
  /** The tools the blueprint's agents have: a workflow step must name one of them. */
  agentTools: readonly string[];
  /** The author's examples from `*.test.yaml` for this rule. */
  examples: readonly RuleTest[];
  timeoutMs?: number;
  signal?: AbortSignal;
}

const TEST_AGENT: AgentInfo = { id: 'rule-test', tenant: 'default', tier: 'ACL-2', tools: [], domains: [], registered: true };

/** The DSL's compile problems (and type problems against the tool's schema) as one line, or the condition. */
export function compileRuleCondition(dsl: string, rule: AuthoredRule, deps: Pick<CompileRuleDeps, 'dsl' | 'tools'>): { condition?: CompiledCondition; problem?: string } {
  const res = compileCondition(dsl, deps.dsl);
  const schema = rule.tool ? deps.tools?.get(rule.tool) : undefined;
  const problems = [...res.problems, ...(schema && rule.tool ? checkArgTypes(dsl, schema, rule.tool) : [])];
  if (problems.length) return { problem: problems.map((p) => `${p.code}${p.offset !== undefined ? ` at ${p.offset}` : ''}: ${p.message}`).join('; ') };
  if (res.condition!.async) return { problem: `uses stateful functions (${[...res.condition!.functions].join(', ')}); a rule is decided from the action alone` };
  return { condition: res.condition };
}

/** Order-only workflow semantics: a call to a step before the steps in front of it ran violates the rule. */
export function workflowHolds(steps: readonly string[], calls: readonly string[]): boolean {
  let k = 0;
  for (const c of calls) {
    const at = steps.indexOf(c);
    if (at < 0) continue;
    if (at > k) return false;
    if (at === k) k = Math.min(k + 1, steps.length);
  }
  return true;
}

export function runConditionTest(condition: CompiledCondition, t: RuleTest): boolean {
  try {
    const ok = condition.evaluate({ trace: { ...(t.trace ?? {}) } as Trace, agent: TEST_AGENT, trustDebt: 0, nowMs: 0, stateNamespace: 'rule-test' });
    return ok === (t.expect === 'pass');
  } catch {
    return false;
  }
}

/** A rule's tests must show it can both allow and refuse: a condition like `true` passes any set of pass-only tests. */
function bothOutcomesProblem(tests: readonly RuleTest[]): string | undefined {
  if (tests.some((t) => t.expect === 'fail') && tests.some((t) => t.expect === 'pass')) return undefined;
  return `do not include both a complying (pass) and a violating (fail) case (${tests.length} test(s))`;
}

/**
 * Re-verifies a `mechanical` lock entry without an LLM (docs/rules.md "Loading"): the locked DSL compiles here
 * (lists and tool schemas of this load), the recorded tests hold at least one pass and one fail case, and every
 * one of them still gives its expected answer against the locked DSL or workflow. Pure and cheap (a compile
 * and a few evaluations), so every loader runs it: the lock is reviewed text, and a hand edit of its `dsl` (to
 * `true`, say) must not be trusted on the strength of a text hash that never covered it. `edited`: the entry
 * carries a dsl_sha256 that its compiled form does not match.
 */
export function verifyLockedEntry(entry: RuleLockEntry, rule: AuthoredRule, deps: Pick<CompileRuleDeps, 'dsl' | 'tools'>): { condition?: CompiledCondition; problem?: string; edited: boolean } {
  const edited = entry.dsl_sha256 !== undefined && entry.dsl_sha256 !== compiledFormHash(entry);
  let evaluate: (t: RuleTest) => boolean;
  let tests: RuleTest[];
  let condition: CompiledCondition | undefined;
  if (entry.kind === 'workflow') {
    const steps = entry.workflow?.steps ?? [];
    if (steps.length < 2) return { problem: 'the locked workflow has fewer than two steps', edited };
    tests = entry.tests.filter((t) => t.calls !== undefined);
    evaluate = (t) => workflowHolds(steps, t.calls ?? []) === (t.expect === 'pass');
  } else {
    const c = compileRuleCondition(entry.dsl ?? '', rule, deps);
    if (!c.condition) return { problem: `the locked condition no longer compiles (${c.problem})`, edited };
    condition = c.condition;
    tests = entry.tests.filter((t) => t.trace !== undefined);
    evaluate = (t) => runConditionTest(c.condition!, t);
  }
  const one = bothOutcomesProblem(tests);
  if (one) return { problem: `the recorded tests ${one}`, edited };
  const failed = tests.filter((t) => !evaluate(t));
  if (failed.length) return { problem: `${failed.length} of ${tests.length} recorded test(s) fail against the locked ${entry.kind === 'workflow' ? 'workflow' : 'DSL'} (${failed.map((t) => t.name ?? `${t.source} ${t.expect}`).join(', ')})`, edited };
  return { ...(condition && { condition }), edited };
}

async function ask(deps: CompileRuleDeps, prompt: string): Promise<{ text?: string; model: string | null; error?: string }> {
  try {
    const r = await deps.llm.complete({ ...(deps.model && { model: deps.model }), system: RULES_SYSTEM, prompt, temperature: 0, maxTokens: 1024, timeoutMs: deps.timeoutMs ?? 30_000 }, deps.signal);
    return { text: r.text, model: r.model ?? deps.model ?? null };
  } catch (e) {
    return { model: deps.model ?? null, error: (e as Error).message };
  }
}

export async function compileRule(rule: AuthoredRule, deps: CompileRuleDeps): Promise<RuleLockEntry> {
  const kind = rule.tier === 2 ? 'workflow' : 'condition';
  const base = { id: rule.id, text_sha256: ruleTextHash(rule.text), kind } as const;
  const asText = (model: string | null, reason: string, rest: Partial<RuleLockEntry> = {}): RuleLockEntry => ({ ...base, model, tests: [], ...rest, outcome: 'text', reason });

  const tr = await ask(deps, translationPrompt(rule, deps.tools, deps.agentTools));
  if (tr.text === undefined) return asText(tr.model, `the LLM did not answer: ${tr.error}`);
  const answer = parseJsonAnswer(tr.text);
  let translation: string;
  let evaluate: (t: RuleTest) => boolean;
  let compiled: Partial<RuleLockEntry>;
  if (kind === 'workflow') {
    const steps = answer?.steps;
    if (!Array.isArray(steps) || steps.length < 2 || !steps.every((s) => typeof s === 'string' && s !== '')) return asText(tr.model, 'the LLM answer is not {"steps": [at least two tool names]}');
    const unknown = (steps as string[]).filter((s) => !deps.agentTools.includes(s));
    compiled = { workflow: { steps: steps as string[] } };
    if (unknown.length) return asText(tr.model, `workflow step(s) ${unknown.join(', ')} are none of the agent's tools (${deps.agentTools.join(', ') || 'none listed'})`, compiled);
    translation = JSON.stringify(steps);
    evaluate = (t) => workflowHolds(steps as string[], t.calls ?? []) === (t.expect === 'pass');
  } else {
    const dsl = answer?.condition;
    if (typeof dsl !== 'string' || dsl.trim() === '') return asText(tr.model, 'the LLM answer is not {"condition": "<DSL>"}');
    compiled = { dsl };
    const c = compileRuleCondition(dsl, rule, deps);
    if (!c.condition) return asText(tr.model, `the translation does not compile: ${c.problem}`, compiled);
    translation = dsl;
    const condition = c.condition;
    evaluate = (t) => runConditionTest(condition, t);
  }

  const tt = await ask(deps, testsPrompt(rule, translation));
  const llmTests = tt.text === undefined ? undefined : parseTests(tt.text, kind);
  const authorTests = deps.examples.filter((t) => (kind === 'workflow' ? t.calls !== undefined : t.trace !== undefined));
  if (!llmTests) return asText(tr.model, tt.text === undefined ? `the LLM did not answer with test cases: ${tt.error}` : 'the LLM test cases are not {"tests": [...]} in the asked shape', compiled);
  const tests = [...llmTests, ...authorTests].map((t) => ({ ...t, passed: evaluate(t) }));
  const failed = tests.filter((t) => !t.passed);
  if (failed.length) return asText(tr.model, `${failed.length} of ${tests.length} test(s) failed (${failed.map((t) => t.name ?? `${t.source} ${t.expect}`).join(', ')})`, { ...compiled, tests });
  // The loader refuses a mechanical entry without both kinds of case (verifyLockedEntry), so never write one.
  const one = bothOutcomesProblem(tests);
  if (one) return asText(tr.model, `the tests ${one}`, { ...compiled, tests });
  return { ...base, model: tr.model, ...compiled, dsl_sha256: compiledFormHash({ kind, ...compiled }), tests, outcome: 'mechanical' };
}
