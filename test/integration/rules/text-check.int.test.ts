/**
 * What a rule becomes at run time (docs/rules.md "Loading"), through `steward eval` with the local
 * OpenAI-protocol server as the LLM: without a lock entry the rule is an LLM-judged text check (the judge's
 * prompt carries the rule text; a warning names the missing entry); with a mechanical entry it is a rule check
 * decided without any LLM call about the rule.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderRuleLock, ruleTextHash } from '../../../src/engine/rules/lock.js';
import { startLlmServer, type LlmStandIn, type RecordedRequest } from '../../support/llm-server.js';

const ROOT = join(import.meta.dirname, '../../..');
const RULE = 'Refunds over 500 need supervisor approval';
const BLUEPRINT = `id: support/refunds@1.0
version: "1.0.0"
description: refunds
rules:
  - { id: refund_limit, text: "${RULE}", tool: process_refund, when: { tool: process_refund }, on_fail: { decision: block, reason: over the limit } }
`;
const promptOf = (r: RecordedRequest) => JSON.stringify(r.body.messages ?? r.body);

function evalCli(dir: string, lines: object[], env: Record<string, string>): Promise<{ code: number | null; out: Record<string, any>[]; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'eval', '--blueprints', dir, '-'], { env: { ...process.env, STEWARD_SIGNING_KEY: join(ROOT, 'test/golden/eval/keys/golden-ed25519.pem'), ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (err += c));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out: out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)), err }));
    p.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  });
}

describe('rules at run time (steward eval, local OpenAI-protocol LLM)', () => {
  let srv: LlmStandIn;
  let dir: string;
  beforeAll(async () => {
    srv = await startLlmServer({ kind: 'score', score: 0.1, explanation: 'violates the rule' });
    dir = mkdtempSync(join(tmpdir(), 'steward-rules-eval-'));
    writeFileSync(join(dir, 'refunds.yaml'), BLUEPRINT);
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const refund = { trace_id: 'r-1', agent_id: 'a1', timestamp: '2026-03-01T09:00:00Z', hook: 'tool_call', tool: 'process_refund', args: { amount: 900 } };
  const env = () => ({ STEWARD_LLM_BASE_URL: srv.url, STEWARD_LLM_MODEL: 'judge' });

  it('no lock entry: judged as text by the LLM at run time, with a warning', async () => {
    srv.requests.length = 0;
    const r = await evalCli(dir, [refund], env());
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/STEWARD_RULES_UNCOMPILED: rule 'refund_limit' has no lock entry/);
    const judged = srv.requests.filter((q) => promptOf(q).includes(RULE));
    expect(judged).toHaveLength(1);
    expect(promptOf(judged[0]!)).toContain('process_refund');
    expect(JSON.stringify(r.out[0])).toContain('rule.refund_limit');
  });

  it('a mechanical lock entry: a rule check, no LLM call about the rule', async () => {
    writeFileSync(join(dir, 'refunds.rules.lock'), renderRuleLock({ version: 1, blueprint: 'support/refunds@1.0', rules: [{ id: 'refund_limit', text_sha256: ruleTextHash(RULE), model: 'm', kind: 'condition', dsl: 'args.amount <= 500', tests: [{ source: 'llm', trace: { tool: 'process_refund', args: { amount: 600 } }, expect: 'fail' }, { source: 'llm', trace: { tool: 'process_refund', args: { amount: 100 } }, expect: 'pass' }], outcome: 'mechanical' }] }));
    srv.requests.length = 0;
    const r = await evalCli(dir, [refund, { ...refund, trace_id: 'r-2', args: { amount: 100 } }], env());
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toMatch(/STEWARD_RULES/);
    expect(srv.requests.filter((q) => promptOf(q).includes(RULE))).toEqual([]);
    expect(r.out.map((o) => [o.trace_id, o.intervention, o.stage])).toEqual([
      ['r-1', 'block', 'rule'],
      ['r-2', expect.not.stringMatching(/^block$/), expect.anything()],
    ]);
  });
});
