import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEvalArgs } from '../../../src/cli/commands/eval.js';

const ROOT = join(import.meta.dirname, '../../..');
const GOLDEN = join(ROOT, 'test/golden/eval');
const tmp = mkdtempSync(join(tmpdir(), 'steward-eval-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function steward(args: string[], input = '', env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], {
    input,
    encoding: 'utf8',
    env: { ...process.env, STEWARD_LLM_BASE_URL: '', STEWARD_SIGNING_KEY: '', ...env },
    timeout: 60_000,
  });
}

describe('parseEvalArgs', () => {
  it('accepts the contracts C3 form and rejects bad arguments', () => {
    expect(parseEvalArgs(['--blueprints', 'd', '--agents=a.yaml', '-'])).toMatchObject({ blueprints: 'd', agents: 'a.yaml', input: '-' });
    expect(parseEvalArgs(['x.jsonl'])).toMatch(/--blueprints/);
    expect(parseEvalArgs(['--blueprints', 'd'])).toMatch(/TRACES/);
    expect(parseEvalArgs(['--blueprints', 'd', '--frobnicate', 'x'])).toMatch(/unknown option/);
  });
});

describe('steward eval / verify (process)', () => {
  it('exit 2 on an agent registry that is not UTF-8, with the position of the bad byte', () => {
    const reg = mkdtempSync(join(tmpdir(), 'steward-eval-reg-'));
    writeFileSync(join(reg, 'latin-agents.yaml'), Buffer.concat([Buffer.from('agents:\n  - id: caf'), Buffer.from([0xe9, 0x0a])]));
    const r = steward(['eval', '--blueprints', join(GOLDEN, 'blueprints/core'), '--agents', join(reg, 'latin-agents.yaml'), '-'], '');
    rmSync(reg, { recursive: true, force: true });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/latin-agents\.yaml:2:12: STEWARD_CONFIG: invalid UTF-8: byte 0xE9/);
  });

  it('exit 2 on a blueprint that is not UTF-8 (an invalid blueprint like any other), with its position', () => {
    const d = mkdtempSync(join(tmpdir(), 'steward-eval-latin-'));
    writeFileSync(join(d, 'x.yaml'), Buffer.concat([Buffer.from('id: x@1.0\nversion: "1.0.0"\ndescription: caf'), Buffer.from([0xe9, 0x0a])]));
    const r = steward(['eval', '--blueprints', d, '-'], '');
    rmSync(d, { recursive: true, force: true });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/x\.yaml:3:17: STEWARD_BLUEPRINT_SYNTAX: invalid UTF-8/);
  });

  it('exit 2 on bad arguments and on invalid blueprints (problems on stderr)', () => {
    expect(steward(['eval', 'traces.jsonl']).status).toBe(2);
    writeFileSync(join(tmp, 'bad.yaml'), 'id: bad@1.0\nversion: "1.0.0"\ndescription: x\nchecks: not-a-list\nscoring: {thresholds: {ok: 0.1, nudge: 0.2, escalate: 0.3, block: 0.4}}\n');
    const r = steward(['eval', '--blueprints', tmp, '-'], '');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/bad\.yaml:\d+:\d+: STEWARD_BLUEPRINT/);
    rmSync(join(tmp, 'bad.yaml'));
  });

  it('--config applies blueprints.workflow_limits: a 4-workflow chain is invalid by default (exit 2), evaluates with max_workflows 4', () => {
    const d = mkdtempSync(join(tmpdir(), 'steward-eval-wf-'));
    const wf = (id: string) => `  - id: ${id}\n    tier: 2\n    workflow: { steps: [read_file, run_tests] }\n`;
    writeFileSync(join(d, 'p.yaml'), `id: w/p@1.0\nversion: "1.0.0"\ndescription: p\nguardrails:\n${wf('w1')}${wf('w2')}`);
    writeFileSync(join(d, 'k.yaml'), `id: w/k@1.0\nversion: "1.0.0"\ndescription: k\ninherits: w/p@1.0\nguardrails:\n${wf('w3')}${wf('w4')}`);
    const cfg = join(tmp, 'wf-limits.yaml');
    writeFileSync(cfg, 'blueprints:\n  workflow_limits: { max_workflows: 4 }\n');
    const trace = JSON.stringify({ trace_id: 'wf-1', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'read_file' });
    const byDefault = steward(['eval', '--blueprints', d, '-'], trace + '\n');
    expect(byDefault.status).toBe(2);
    expect(byDefault.stderr).toMatch(/k\.yaml:\d+:\d+: STEWARD_GATE_WORKFLOW_LIMIT: 4 workflows/);
    const larger = steward(['eval', '--blueprints', d, '--config', cfg, '-'], trace + '\n');
    rmSync(d, { recursive: true, force: true });
    expect(larger.stderr).not.toMatch(/STEWARD_GATE_WORKFLOW_LIMIT/);
    expect(larger.status).toBe(0);
    expect(JSON.parse(larger.stdout.trim().split('\n')[0]!)).toMatchObject({ trace_id: 'wf-1' });
  });

  it('a repeated trace_id: the same record is a redelivery (debt moves once), another trace under the id counts; both warned about', () => {
    const t = (id: string, hour: number, amount: number) =>
      JSON.stringify({ trace_id: id, agent_id: 'a2', timestamp: `2025-03-01T0${hour}:00:00`, hook: 'tool_call', tool: 'transfer', args: { amount } });
    const lines = [t('t-1', 0, 20000), t('t-1', 0, 20000), t('t-1', 1, 20000), t('t-2', 2, 1)];
    const r = steward(['eval', '--blueprints', join(GOLDEN, 'blueprints/core'), '-'], lines.join('\n') + '\n');
    expect(r.status, r.stderr).toBe(0);
    const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { trace_id: string; intervention: string; trust_debt: { before: number; after: number } });
    expect(out.map((o) => [o.trace_id, o.intervention])).toEqual([['t-1', 'block'], ['t-1', 'block'], ['t-1', 'block'], ['t-2', 'ok']]);
    expect(out[0].trust_debt).toEqual({ before: 0, after: 0.15, level: 'normal' });
    expect(out[1].trust_debt).toEqual({ before: 0, after: 0.15, level: 'normal' }); // redelivery: the first application, once
    expect(out[2].trust_debt.after).toBeCloseTo(0.15 * 0.95 ** (1 / 24) + 0.15, 5); // another trace: counted
    expect(r.stderr).toMatch(/warning: line 2 repeats trace_id "t-1" of line 1: same record, applied once/);
    expect(r.stderr).toMatch(/warning: line 3 repeats trace_id "t-1" of line 1: a different trace, evaluated and counted/);
    expect(r.stderr).toMatch(/2 repeated trace_id\(s\)/);
  });

  it('streams stdin → JSONL in input order, summary on stderr; signed verdicts verify, tampered ones fail', () => {
    const pub = join(tmp, 'pub.pem');
    const lines = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify({ trace_id: `p-${i}`, agent_id: 'a2', timestamp: `2025-03-01T09:${String(i).padStart(2, '0')}:00Z`, hook: 'tool_call', tool: 'transfer', args: { amount: i * 500 } }),
    );
    const r = steward(['eval', '--blueprints', join(GOLDEN, 'blueprints/core'), '--public-key-out', pub, '-'], lines.join('\n') + '\n', {
      STEWARD_SIGNING_KEY: join(GOLDEN, 'keys/golden-ed25519.pem'),
    });
    expect(r.status, r.stderr).toBe(0);
    const out = r.stdout.trim().split('\n');
    expect(out.map((l) => JSON.parse(l).trace_id)).toEqual(lines.map((l) => JSON.parse(l).trace_id));
    expect(r.stderr).toMatch(/30 trace\(s\) evaluated/);
    expect(readFileSync(pub, 'utf8')).toBe(readFileSync(join(GOLDEN, 'keys/golden-ed25519.pub.pem'), 'utf8'));
    writeFileSync(join(tmp, 'out.jsonl'), r.stdout);
    expect(steward(['verify', '--public-key', pub, join(tmp, 'out.jsonl')]).status).toBe(0);
    const tampered = r.stdout.replace('"confidence_score":1', '"confidence_score":0.99');
    const v = steward(['verify', '--public-key', pub, '-'], tampered);
    expect(v.status).toBe(1);
    expect(v.stdout).toMatch(/^FAIL line 1 p-0: signature does not match/m);
    expect(steward(['verify', '-'], tampered).status).toBe(2);
  });
});

