/**
 * What `steward compile-rules` asks the LLM (docs/rules.md "Compile loop"), and how it reads the answers.
 * The model is asked for Steward's condition DSL — never code: an answer is only ever parsed and compiled
 * by the DSL compiler, so the worst a bad answer can do is fail to compile or fail its tests.
 */
import { jsonAnswerBody } from '../json-fence.js';
import type { AuthoredRule, JsonSchema, RuleTest } from './types.js';

export const RULES_SYSTEM =
  'You translate policy rules written in plain language into a small, safe condition language. You answer with one JSON object and nothing else. Never write JavaScript or any other programming language.';

const DSL_SUMMARY = [
  'The condition language (an invariant: it must evaluate to TRUE when the action COMPLIES with the rule, FALSE when it violates it):',
  '- fields of the agent trace: tool (the tool name), args.<name> (the tool arguments), content, hook ("tool_call", "final_answer"), agent.tier, agent.tenant',
  '- comparisons: > >= < <= == != ; strings in double quotes; numbers plain (500, 0.5); x contains "s"; x matches "regex"',
  '- logic: AND, OR, NOT, parentheses; functions: exists(x), in_allowlist(x, "list"), is_external(x), contains_entity(x, "credit_card")',
  '- a missing field compares false; write the condition so that it is true for actions the rule does not concern (e.g. tool != "refund" OR args.amount <= 500)',
].join('\n');

/**
 * Only the schema of the tool the rule governs: a blueprint may import hundreds of tools, and every rule's
 * prompt carrying all of them multiplied the prompt size (and cost) by the tool count for nothing — the
 * type check only ever holds a rule's `args.*` to its own tool.
 */
function toolLines(tool: string | undefined, tools: ReadonlyMap<string, JsonSchema> | undefined): string {
  const schema = tool === undefined ? undefined : tools?.get(tool);
  if (!schema) return 'Tool input schema: none known.';
  return `Input schema of the tool ${JSON.stringify(tool)} (JSON Schema): ${JSON.stringify(schema)}`;
}

export function translationPrompt(rule: AuthoredRule, tools: ReadonlyMap<string, JsonSchema> | undefined, agentTools: readonly string[]): string {
  if (rule.tier === 2) {
    return [
      'Convert this process rule into an ordered workflow of tool names: each step must happen before the next.',
      `Rule: ${JSON.stringify(rule.text)}`,
      `The agent's tools: ${JSON.stringify(agentTools)}`,
      'Use only tool names from that list.',
      'Answer: {"steps": ["first_tool", "second_tool"]}',
    ].join('\n');
  }
  return [
    DSL_SUMMARY,
    toolLines(rule.tool, tools),
    ...(rule.tool ? [`The rule governs calls of the tool ${JSON.stringify(rule.tool)}.`] : []),
    `Rule: ${JSON.stringify(rule.text)}`,
    'Answer: {"condition": "<the condition>"}',
  ].join('\n');
}

export function testsPrompt(rule: AuthoredRule, translation: string): string {
  if (rule.tier === 2) {
    return [
      `Write at least 3 test cases for the process rule ${JSON.stringify(rule.text)} (compiled to the workflow ${translation}).`,
      'Each is the sequence of tool calls an agent made and whether it complies with the rule.',
      'Answer: {"tests": [{"calls": ["tool_a", "tool_b"], "expect": "pass"}, {"calls": ["tool_b"], "expect": "fail"}]}',
    ].join('\n');
  }
  return [
    `Write at least 3 test cases for the rule ${JSON.stringify(rule.text)}.`,
    'Each is an agent trace (a JSON object with hook, tool, args, content as needed) and whether the action complies with the rule (pass) or violates it (fail). Include both outcomes.',
    'Answer: {"tests": [{"trace": {"hook": "tool_call", "tool": "...", "args": {}}, "expect": "pass"}]}',
  ].join('\n');
}

/** Bare JSON or one ```json fence; undefined for anything else. */
export function parseJsonAnswer(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(jsonAnswerBody(text));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const MAX_TESTS = 20;

/** The LLM's test cases; undefined when the answer has none in the asked shape. */
export function parseTests(text: string, kind: 'condition' | 'workflow'): RuleTest[] | undefined {
  const o = parseJsonAnswer(text);
  if (!o || !Array.isArray(o.tests) || o.tests.length === 0) return undefined;
  const out: RuleTest[] = [];
  for (const t of o.tests.slice(0, MAX_TESTS)) {
    if (typeof t !== 'object' || t === null) return undefined;
    const r = t as Record<string, unknown>;
    if (r.expect !== 'pass' && r.expect !== 'fail') return undefined;
    if (kind === 'workflow') {
      if (!Array.isArray(r.calls) || !r.calls.every((c) => typeof c === 'string')) return undefined;
      out.push({ source: 'llm', calls: r.calls as string[], expect: r.expect });
    } else {
      if (typeof r.trace !== 'object' || r.trace === null || Array.isArray(r.trace)) return undefined;
      out.push({ source: 'llm', trace: r.trace as Record<string, unknown>, expect: r.expect });
    }
  }
  return out;
}
