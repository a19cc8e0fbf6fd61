/**
 * `steward compile-rules` against a local OpenAI-protocol server (test/support/llm-server.ts) answering good,
 * wrong and invalid translations, with tool schemas from a real MCP server: each outcome is asserted in the
 * lock file and in what the loader makes of it, and the loader never calls the LLM (gate spec §7, §8, §10).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSidecars } from '../../../src/adapters/fs/rule-sidecars.js';
import { createLlmClient } from '../../../src/adapters/llm/index.js';
import { run as compileRules } from '../../../src/cli/commands/compile-rules.js';
import { run as validate } from '../../../src/cli/commands/validate.js';
import { compileBlueprintSet } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { parseRuleLock, ruleLockPath } from '../../../src/engine/rules/lock.js';
import { startLlmServer, type LlmStandIn, type RecordedRequest } from '../../support/llm-server.js';
import { REFUND_TOOLS, startHttpMcpServer, type HttpMcpServer } from '../mcp/fixtures/mcp-server.js';

const sink = () => {
  let text = '';
  const w = new Writable({ write: (c, _e, cb) => ((text += String(c)), cb()) });
  return { w, text: () => text };
};
const promptOf = (r: RecordedRequest) => ((r.body.messages as { content: string }[]) ?? []).map((m) => m.content).join('\n');

const RULES = {
  refund: 'Refunds over $500 need supervisor approval',
  wrong: 'Refunds in a currency other than USD or EUR are not allowed',
  invalid: 'Never refund to a customer flagged for fraud',
  tier1: 'Never refund more than 10000',
  process: 'Always verify identity before account access',
};

/** The scripted model: a good, a wrong and an invalid (JavaScript) translation, and test cases per rule. */
function answer(prompt: string, mode: { tier1Garbage?: boolean }): string {
  const isTests = prompt.includes('test cases');
  const refundTrace = (amount: number) => ({ hook: 'tool_call', tool: 'process_refund', args: { amount, order_id: 'o1', currency: 'USD' } });
  if (prompt.includes(RULES.refund))
    return isTests ? JSON.stringify({ tests: [{ trace: refundTrace(600), expect: 'fail' }, { trace: refundTrace(200), expect: 'pass' }, { trace: { hook: 'tool_call', tool: 'lookup_order' }, expect: 'pass' }] }) : '```json\n{"condition": "tool != \\"process_refund\\" OR args.amount <= 500"}\n```';
  if (prompt.includes(RULES.wrong))
    return isTests
      ? JSON.stringify({ tests: [{ trace: { ...refundTrace(5), args: { amount: 5, order_id: 'o', currency: 'GBP' } }, expect: 'fail' }, { trace: refundTrace(5), expect: 'pass' }] })
      : JSON.stringify({ condition: "tool != 'process_refund' OR args.amount > 0" }); // compiles, but lets GBP through
  if (prompt.includes(RULES.invalid)) return isTests ? '{"tests": []}' : JSON.stringify({ condition: '(args) => !args.customer.fraud' });
  if (prompt.includes(RULES.tier1)) {
    if (mode.tier1Garbage) return 'I cannot help with that.';
    return isTests ? JSON.stringify({ tests: [{ trace: refundTrace(20000), expect: 'fail' }, { trace: refundTrace(10000), expect: 'pass' }] }) : JSON.stringify({ condition: "tool != 'process_refund' OR args.amount <= 10000" });
  }
  if (prompt.includes(RULES.process))
    return isTests ? JSON.stringify({ tests: [{ calls: ['verify_identity', 'access_account'], expect: 'pass' }, { calls: ['access_account'], expect: 'fail' }] }) : JSON.stringify({ steps: ['verify_identity', 'access_account'] });
  return 'unexpected prompt';
}

describe('steward compile-rules → lock → load', () => {
  let dir: string;
  let llm: LlmStandIn;
  let mcp: HttpMcpServer;
  const mode: { tier1Garbage?: boolean } = {};
  let file: string;
  let text: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'steward-rules-'));
    llm = await startLlmServer();
    llm.setDefault((r) => ({ kind: 'content', content: answer(promptOf(r), mode) }));
    mcp = await startHttpMcpServer(REFUND_TOOLS);
    file = join(dir, 'refunds@1.0.yaml');
    text = `id: support/refunds@1.0
version: "1.0.0"
description: refunds
mcp_servers:
  - { name: payments, url: "${mcp.url}" }
rules:
  - { id: refund_limit, text: "${RULES.refund}", tool: process_refund, on_fail: { decision: escalate, reason: needs a supervisor } }
  - { id: currency, text: "${RULES.wrong}", tool: process_refund }
  - { id: fraud, text: "${RULES.invalid}", tool: process_refund }
  - { id: refund_ceiling, text: "${RULES.tier1}", tool: process_refund, tier: 1 }
  - { id: verify_first, text: "${RULES.process}", tier: 2 }
`;
    await writeFile(file, text);
    await writeFile(join(dir, 'agents.yaml'), 'agents:\n  - { id: support-1, tenant: acme, tier: ACL-2, tools: [process_refund, lookup_order, verify_identity, access_account] }\n');
    // the author's own example: exactly 500 is allowed (the LLM's cases do not test the boundary)
    await writeFile(join(dir, 'refunds.test.yaml'), `tests:
  - name: a refund of exactly 500 needs no approval
    trace: { agent_id: support-1, hook: tool_call, tool: process_refund, args: { amount: 500, order_id: o9, currency: EUR } }
    expect: { failed_rules: [] }
`);
  });
  afterAll(async () => {
    await llm?.close();
    await mcp?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const load = async () => {
    const files = [{ file, text: await readFile(file, 'utf8') }];
    const side = await readSidecars(files);
    return compileBlueprintSet(files, { config: defaultEngineConfig(), sidecars: side.sidecars });
  };

  it('good → mechanical, wrong → text (a failed test), invalid → text (no compile), process → workflow; the loader uses the lock without the LLM', async () => {
    const out = sink();
    const err = sink();
    const code = await compileRules([dir, '--model', 'rules-model'], { llm: createLlmClient({ baseUrl: llm.url, model: 'rules-model' }), out: out.w, err: err.w });
    expect(err.text()).toBe('');
    expect(code).toBe(0);
    const lock = parseRuleLock(await readFile(ruleLockPath(file), 'utf8'), 'x').lock!;
    const by = Object.fromEntries(lock.rules.map((e) => [e.id, e]));
    expect(by.refund_limit).toMatchObject({ outcome: 'mechanical', model: 'rules-model', dsl: 'tool != "process_refund" OR args.amount <= 500' });
    expect(by.refund_limit!.tests.map((t) => [t.source, t.expect, t.passed])).toEqual([['llm', 'fail', true], ['llm', 'pass', true], ['llm', 'pass', true], ['author', 'pass', true]]);
    expect(by.currency).toMatchObject({ outcome: 'text', reason: expect.stringMatching(/1 of 3 test\(s\) failed \(llm fail\)/) });
    expect(by.fraud).toMatchObject({ outcome: 'text', reason: expect.stringMatching(/does not compile: STEWARD_DSL_PARSE/) });
    expect(by.refund_ceiling).toMatchObject({ outcome: 'mechanical' });
    expect(by.verify_first).toMatchObject({ kind: 'workflow', outcome: 'mechanical', workflow: { steps: ['verify_identity', 'access_account'] } });
    // the translation prompt carried the imported MCP schema
    expect(llm.requests.some((r) => promptOf(r).includes('"order_id":{"type":"string"}'))).toBe(true);

    const asked = llm.requests.length;
    const r = await load();
    expect(r.errors).toEqual([]);
    expect(r.warnings).toEqual([]);
    const bp = r.set!.get('support/refunds@1.0')!;
    expect(bp.rules.map((x) => x.id)).toEqual(expect.arrayContaining(['refund_limit', 'refund_ceiling']));
    expect(bp.rules.find((x) => x.id === 'refund_limit')!.onFail).toEqual({ decision: 'escalate', reason: 'needs a supervisor' });
    expect(bp.metrics.filter((m) => m.scorer === 'llm-judge' && m.id !== undefined && ['currency', 'fraud'].includes(m.id)).map((m) => m.id).sort()).toEqual(['currency', 'fraud']);
    expect(bp.gate!.workflows.map((w) => w.id)).toEqual(['rule.verify_first']);
    expect(llm.requests.length).toBe(asked);

    // a second run asks nothing: every entry is current
    const again = sink();
    expect(await compileRules([dir], { llm: createLlmClient({ baseUrl: llm.url, model: 'rules-model' }), out: again.w, err: sink().w })).toBe(0);
    expect(llm.requests.length).toBe(asked);
    expect(again.text()).toMatch(/rule refund_limit: mechanical \(unchanged\)/);
  });

  it('a hand-edited lock entry (dsl → "true") is not trusted by the loader and is compiled again by compile-rules (review finding 5)', async () => {
    const lockFile = ruleLockPath(file);
    const good = await readFile(lockFile, 'utf8');
    const lock = parseRuleLock(good, 'x').lock!;
    const ceiling = lock.rules.find((e) => e.id === 'refund_ceiling')!;
    expect(ceiling.dsl_sha256).toMatch(/^[0-9a-f]{64}$/);
    // the text hash still matches: before, this loaded as a tier-1 rule that allows everything
    await writeFile(lockFile, good.replace(JSON.stringify(ceiling.dsl), '"true"'));
    const r = await load();
    expect(r.set).toBeUndefined();
    expect(r.errors.map((e) => e.format())).toEqual([expect.stringMatching(/refunds@1\.0\.yaml:10:\d+: STEWARD_RULES_LOCK: rule 'refund_ceiling': its lock entry is not trusted: 1 of 3 recorded test\(s\) fail against the locked DSL/)]);

    const asked = llm.requests.length;
    const out = sink();
    expect(await compileRules([dir], { llm: createLlmClient({ baseUrl: llm.url, model: 'rules-model' }), out: out.w, err: sink().w })).toBe(0);
    expect(out.text()).toMatch(/rule refund_ceiling: mechanical \(the lock entry failed re-verification: 1 of 3 recorded test\(s\) fail against the locked DSL \(llm fail\); compiled again\)/);
    expect(out.text()).toMatch(/rule refund_limit: mechanical \(unchanged\)/);
    expect(llm.requests.length).toBe(asked + 2); // translation + tests of that one rule
    expect(await readFile(lockFile, 'utf8')).toBe(good);
    expect((await load()).errors).toEqual([]);
  });

  it('a tier-1 rule the LLM answers garbage for is exit 1 and a load error; a changed text is stale for validate', async () => {
    mode.tier1Garbage = true;
    const err = sink();
    expect(await compileRules([dir, '--force'], { llm: createLlmClient({ baseUrl: llm.url, model: 'rules-model' }), out: sink().w, err: err.w })).toBe(1);
    expect(err.text()).toMatch(/1 tier-1 rule\(s\) did not compile/);
    const r = await load();
    expect(r.set).toBeUndefined();
    expect(r.errors.map((e) => e.format())).toEqual([expect.stringMatching(/refunds@1\.0\.yaml:10:\d+: STEWARD_RULES_NOT_MECHANICAL: rule 'refund_ceiling' is tier 1 \(hard safety\) and did not compile to a tested condition \(the LLM answer is not/)]);

    mode.tier1Garbage = false;
    expect(await compileRules([dir, '--force'], { llm: createLlmClient({ baseUrl: llm.url, model: 'rules-model' }), out: sink().w, err: sink().w })).toBe(0);
    await writeFile(file, (await readFile(file, 'utf8')).replace(RULES.refund, 'Refunds over $400 need supervisor approval'));
    const chunks: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((c: string | Uint8Array) => (chunks.push(String(c)), true)) as typeof process.stderr.write;
    try {
      expect(await validate([dir])).toBe(0);
    } finally {
      process.stderr.write = orig;
    }
    const warned = chunks.join('');
    expect(warned).toMatch(/refunds@1\.0\.rules\.lock:1:1: STEWARD_RULES_STALE: stale lock entry 'refund_limit': the rule text changed/);
    expect(warned).toMatch(/STEWARD_RULES_STALE: rule 'refund_limit' changed since its lock entry: checked as text/);
  });
});
