import { describe, expect, it } from 'vitest';
import { dslOptionsFromConfig } from '../../../src/engine/dsl/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { compileRule, verifyLockedEntry, workflowHolds } from '../../../src/engine/rules/compile-loop.js';
import { compiledFormHash, ruleTextHash } from '../../../src/engine/rules/lock.js';
import type { AuthoredRule, RuleTest } from '../../../src/engine/rules/types.js';
import type { LlmClient, LlmRequest } from '../../../src/engine/types.js';

/** Answers translation and test-case prompts from two scripted texts; records the prompts. */
function scripted(translation: string, tests: string): LlmClient & { prompts: LlmRequest[] } {
  const prompts: LlmRequest[] = [];
  return {
    prompts,
    async complete(req) {
      prompts.push(req);
      return { text: req.prompt.includes('test cases') ? tests : translation, model: 'scripted-model', latencyMs: 1 };
    },
  };
}

const dsl = dslOptionsFromConfig(defaultEngineConfig());
const refund: AuthoredRule = { id: 'refund_limit', text: 'Refunds over $500 need supervisor approval', tool: 'process_refund' };
const tools = new Map([['process_refund', { type: 'object', properties: { amount: { type: 'number' }, currency: { type: 'string' } }, required: ['amount'] }]]);
const tests = JSON.stringify({
  tests: [
    { trace: { hook: 'tool_call', tool: 'process_refund', args: { amount: 600 } }, expect: 'fail' },
    { trace: { hook: 'tool_call', tool: 'process_refund', args: { amount: 300 } }, expect: 'pass' },
    { trace: { hook: 'tool_call', tool: 'lookup_order', args: {} }, expect: 'pass' },
  ],
});
const deps = (llm: LlmClient, examples: RuleTest[] = []) => ({ llm, dsl, tools, agentTools: ['verify_identity', 'access_account'], examples });

describe('compileRule (gate spec §7)', () => {
  it('a good translation whose tests all pass is mechanical, with the DSL, model, hash and every test recorded', async () => {
    const llm = scripted(JSON.stringify({ condition: 'tool != "process_refund" OR args.amount <= 500' }), tests);
    const author: RuleTest = { source: 'author', name: 'author: 501 fails', trace: { hook: 'tool_call', tool: 'process_refund', args: { amount: 501 } }, expect: 'fail' };
    const e = await compileRule(refund, deps(llm, [author]));
    expect(e.outcome).toBe('mechanical');
    expect(e.dsl).toBe('tool != "process_refund" OR args.amount <= 500');
    expect(e.model).toBe('scripted-model');
    expect(e.text_sha256).toBe(ruleTextHash(refund.text));
    expect(e.tests).toHaveLength(4);
    expect(e.tests.every((t) => t.passed)).toBe(true);
    expect(e.tests.at(-1)).toMatchObject({ source: 'author', name: 'author: 501 fails' });
    // the translation prompt names the DSL and the imported schema, never asks for code
    expect(llm.prompts[0]!.prompt).toContain('"amount":{"type":"number"}');
    expect(llm.prompts[0]!.system).toMatch(/Never write JavaScript/);
  });

  it("the translation prompt carries only the rule's own tool's schema (review finding 8)", async () => {
    const many = new Map<string, Record<string, unknown>>([...tools, ['wire_transfer', { type: 'object', properties: { iban_secret_marker: { type: 'string' } } }]]);
    const llm = scripted(JSON.stringify({ condition: 'tool != "process_refund" OR args.amount <= 500' }), tests);
    await compileRule(refund, { ...deps(llm), tools: many });
    expect(llm.prompts[0]!.prompt).toContain('Input schema of the tool "process_refund"');
    expect(llm.prompts[0]!.prompt).not.toContain('iban_secret_marker');
    const untooled = scripted(JSON.stringify({ condition: 'true' }), tests);
    await compileRule({ id: 'any', text: 'Be nice' }, { ...deps(untooled), tools: many });
    expect(untooled.prompts[0]!.prompt).toContain('Tool input schema: none known.');
    expect(untooled.prompts[0]!.prompt).not.toMatch(/"amount":\{|iban_secret_marker/);
  });

  it('a wrong translation (compiles, but a test fails) stays text and names the failed tests', async () => {
    const e = await compileRule(refund, deps(scripted(JSON.stringify({ condition: 'tool != "process_refund" OR args.amount <= 1000' }), tests)));
    expect(e.outcome).toBe('text');
    expect(e.reason).toMatch(/1 of 3 test\(s\) failed/);
    expect(e.tests.filter((t) => !t.passed)).toHaveLength(1);
  });

  it("an author's example the LLM tests miss makes a subtly wrong translation text", async () => {
    const author: RuleTest = { source: 'author', name: 'exactly 500 is allowed', trace: { hook: 'tool_call', tool: 'process_refund', args: { amount: 500 } }, expect: 'pass' };
    const e = await compileRule(refund, deps(scripted(JSON.stringify({ condition: 'tool != "process_refund" OR args.amount < 500' }), tests), [author]));
    expect(e.outcome).toBe('text');
    expect(e.reason).toContain('exactly 500 is allowed');
  });

  it('JavaScript instead of DSL does not compile: text, with the compiler problem', async () => {
    const e = await compileRule(refund, deps(scripted(JSON.stringify({ condition: '(args) => args.amount > 500' }), tests)));
    expect(e.outcome).toBe('text');
    expect(e.reason).toMatch(/does not compile: STEWARD_DSL_PARSE/);
    expect(e.dsl).toBe('(args) => args.amount > 500');
  });

  it('a translation with a typo against the imported schema does not compile (type check)', async () => {
    const e = await compileRule(refund, deps(scripted(JSON.stringify({ condition: 'tool != "process_refund" OR args.amout <= 500' }), tests)));
    expect(e.outcome).toBe('text');
    expect(e.reason).toMatch(/STEWARD_DSL_TYPE at \d+: args\.amout: tool 'process_refund' has no input 'amout'/);
  });

  it('garbage answers (no JSON, wrong shape, bad test cases, a failing LLM) stay text with the reason', async () => {
    expect((await compileRule(refund, deps(scripted('Sure! Here is your rule.', tests)))).reason).toMatch(/not \{"condition"/);
    expect((await compileRule(refund, deps(scripted('{"rule": 1}', tests)))).reason).toMatch(/not \{"condition"/);
    const badTests = await compileRule(refund, deps(scripted(JSON.stringify({ condition: 'args.amount <= 500' }), '{"tests": [{"trace": 5, "expect": "pass"}]}')));
    expect(badTests).toMatchObject({ outcome: 'text', dsl: 'args.amount <= 500' });
    expect(badTests.reason).toMatch(/test cases are not/);
    const down: LlmClient = { complete: () => Promise.reject(new Error('connect ECONNREFUSED')) };
    expect(await compileRule(refund, deps(down))).toMatchObject({ outcome: 'text', model: null, reason: expect.stringMatching(/did not answer: connect ECONNREFUSED/) });
  });

  const GOOD = 'tool != "process_refund" OR args.amount <= 500';
  it('tests without both a pass and a fail case leave the rule text (the loader would refuse such an entry); a mechanical entry records dsl_sha256', async () => {
    const passOnly = JSON.stringify({ tests: [{ trace: { hook: 'tool_call', tool: 'process_refund', args: { amount: 300 } }, expect: 'pass' }] });
    const e = await compileRule(refund, deps(scripted(JSON.stringify({ condition: 'true' }), passOnly)));
    expect(e).toMatchObject({ outcome: 'text', dsl: 'true', reason: 'the tests do not include both a complying (pass) and a violating (fail) case (1 test(s))' });
    const good = await compileRule(refund, deps(scripted(JSON.stringify({ condition: GOOD }), tests)));
    expect(good).toMatchObject({ outcome: 'mechanical', dsl_sha256: compiledFormHash({ kind: 'condition', dsl: GOOD }) });
    expect(verifyLockedEntry(good, refund, { dsl, tools })).toMatchObject({ edited: false });
    expect(verifyLockedEntry(good, refund, { dsl, tools }).problem).toBeUndefined();
  });

  it('stateful translations are refused (a rule is decided from the action alone)', async () => {
    const e = await compileRule(refund, deps(scripted(JSON.stringify({ condition: "storage.get('n', 0) < 5" }), tests)));
    expect(e.outcome).toBe('text');
    expect(e.reason).toMatch(/stateful/);
  });
});

describe('process rules → workflows (gate spec §8)', () => {
  const rule: AuthoredRule = { id: 'verify_first', text: 'Always verify identity before account access', tier: 2 };
  const wfTests = JSON.stringify({ tests: [{ calls: ['verify_identity', 'access_account'], expect: 'pass' }, { calls: ['access_account'], expect: 'fail' }, { calls: ['access_account', 'verify_identity'], expect: 'fail' }] });

  it('steps over the agent tools with passing tests are mechanical', async () => {
    const e = await compileRule(rule, deps(scripted(JSON.stringify({ steps: ['verify_identity', 'access_account'] }), wfTests)));
    expect(e).toMatchObject({ kind: 'workflow', outcome: 'mechanical', workflow: { steps: ['verify_identity', 'access_account'] } });
    expect(e.tests.every((t) => t.passed)).toBe(true);
  });

  it('a step that is none of the agent tools stays text', async () => {
    const e = await compileRule(rule, deps(scripted(JSON.stringify({ steps: ['check_id', 'access_account'] }), wfTests)));
    expect(e.outcome).toBe('text');
    expect(e.reason).toMatch(/check_id are none of the agent's tools/);
  });

  it('order-only semantics', () => {
    const steps = ['a', 'b', 'c'];
    expect(workflowHolds(steps, ['a', 'x', 'b', 'c'])).toBe(true);
    expect(workflowHolds(steps, ['a'])).toBe(true);
    expect(workflowHolds(steps, ['a', 'c'])).toBe(false);
    expect(workflowHolds(steps, ['b'])).toBe(false);
    expect(workflowHolds(steps, ['a', 'b', 'a', 'b', 'c'])).toBe(true);
  });
});
