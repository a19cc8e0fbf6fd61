import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTestFile } from '../../../src/cli/eval-blueprint-tests.js';

const ROOT = join(import.meta.dirname, '../../..');
const tmp = mkdtempSync(join(tmpdir(), 'steward-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const steward = (args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8', cwd: ROOT, timeout: 60_000, env: { ...process.env, STEWARD_LLM_BASE_URL: '' } });

describe('parseTestFile', () => {
  it('rejects unknown expect keys and tests without traces', () => {
    expect(() => parseTestFile('tests: [{name: x, trace: {agent_id: a}, expect: {intervnetion: ok}}]', 'f.test.yaml')).toThrow(/unknown expect key\(s\) intervnetion/);
    expect(() => parseTestFile('tests: [{name: x, expect: {intervention: ok}}]', 'f.test.yaml')).toThrow(/needs 'trace' or 'traces'/);
    expect(parseTestFile('llm_score: 0.5\ntests: [{trace: {agent_id: a}, expect: {intervention: ok}}]', 'f').tests[0].llm).toEqual({ score: 0.5 });
  });
});

describe('steward test (process)', () => {
  it('the example blueprints pass their tests (exit 0)', () => {
    const r = steward(['test', 'blueprints']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^PASS: (\d+)\/\1 test\(s\) passed in [4-9] file\(s\)$/m);
  });

  it('a failing expectation prints a diff and exits 1; a broken test file exits 2', () => {
    cpSync(join(ROOT, 'test/golden/eval/blueprints/core'), join(tmp, 'bp'), { recursive: true });
    writeFileSync(
      join(tmp, 'bp/ops.test.yaml'),
      `tests:
  - name: wrong on purpose
    trace: { agent_id: a2, hook: tool_call, tool: transfer, args: { amount: 20000 } }
    expect: { intervention: ok, failed_rules: [r_block] }
  - name: right
    trace: { agent_id: a2, hook: tool_call, tool: transfer, args: { amount: 20000 } }
    expect: { intervention: block, stage: rule }
`,
    );
    const r = steward(['test', join(tmp, 'bp')]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('FAIL');
    expect(r.stdout).toContain('wrong on purpose');
    expect(r.stdout).toContain('intervention: expected "ok", got "block"');
    expect(r.stdout).toContain('failed_rules: expected [r_block], got [r_block, r_escalate, r_flag, r_nudge]');
    expect(r.stdout).toMatch(/FAIL: 1\/2 test\(s\) passed/);
    writeFileSync(join(tmp, 'bp/ops.test.yaml'), 'tests: nope\n');
    expect(steward(['test', join(tmp, 'bp')]).status).toBe(2);
    expect(steward(['test']).status).toBe(2);
  });
});
