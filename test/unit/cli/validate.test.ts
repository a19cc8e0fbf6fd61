/**
 * `steward validate` and `steward diff`, spawned as a user runs them (npx tsx src/cli/main.ts ...).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../../..');
const tsx = join(root, 'node_modules/.bin/tsx');
const steward = (args: string[], cwd = root) => spawnSync(tsx, [join(root, 'src/cli/main.ts'), ...args], { cwd, encoding: 'utf8', timeout: 60_000 });

const tmp = mkdtempSync(join(tmpdir(), 'steward-validate-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const bp = (id: string, version: string, extra = ''): string => `id: ${id}\nversion: "${version}"\ndescription: d\n${extra}`;

describe('steward validate', () => {
  it('exits 0 on the shipped blueprints/', () => {
    const r = steward(['validate', 'blueprints']);
    expect(r.stderr).toContain('OK');
    expect(r.stdout).toBe('');
    expect(r.status).toBe(0);
  });

  it('exits 1 and prints every problem as FILE:LINE:COL: CODE: message, sorted', () => {
    const d = join(tmp, 'bad');
    mkdirSync(join(d, 'sub'), { recursive: true });
    writeFileSync(join(d, 'b.yaml'), bp('b@1.0', '1.0.0', 'scorng: {}\n'));
    writeFileSync(join(d, 'sub', 'a.yaml'), bp('a@1.0', '1.0', 'inherits: nope@1\n'));
    writeFileSync(join(d, 'a.test.yaml'), 'not: [a blueprint');
    writeFileSync(join(d, 'agents.yaml'), 'agents:\n  - id: x\n    tier: ACL-8\n');
    const r = steward(['validate', 'bad'], tmp);
    expect(r.status).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual([
      'bad/agents.yaml:3:11: STEWARD_BLUEPRINT_TIER: tier "ACL-8" is not ACL-0..ACL-5 (or GT-n) (at $.agents[0].tier)',
      "bad/b.yaml:4:1: STEWARD_BLUEPRINT_UNKNOWN_KEY: unknown key 'scorng' (did you mean 'scoring'?); extensions must start with 'x-' (at $.scorng)",
      'bad/sub/a.yaml:2:10: STEWARD_BLUEPRINT_SEMVER: version "1.0" is not a semantic version MAJOR.MINOR.PATCH (e.g. "1.0.0") (at $.version)',
      "bad/sub/a.yaml:4:11: STEWARD_BLUEPRINT_MISSING_PARENT: parent 'nope@1' not found (at $.inherits)",
    ]);
  });

  it('warns (exit 0) about a gate workflow step that names a tool no agent of the registry lists (gate spec §11)', () => {
    const d = join(tmp, 'wf');
    mkdirSync(d, { recursive: true });
    writeFileSync(
      join(d, 'g.yaml'),
      bp('gate/wf@1.0', '1.0.0', 'guardrails:\n  - id: read_then_test\n    tier: 2\n    workflow: { steps: [read_file, run_testz] }\n'),
    );
    writeFileSync(join(d, 'agents.yaml'), 'agents:\n  - { id: c1, tenant: t, tier: ACL-2, tools: [read_file, run_tests] }\n');
    const r = steward(['validate', 'wf'], tmp);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^warning: wf\/g\.yaml:7:\d+: STEWARD_GATE_UNKNOWN_TOOL: workflow 'read_then_test' step 'run_testz' names a tool that no agent in the registry lists/m);
    expect(r.stderr).not.toContain("step 'read_file'");
  });

  it('rejects a tier-1 guardrail that enforces nothing (`patterns: []`, no condition) at FILE:LINE:COL (D47)', () => {
    const d = join(tmp, 'empty-tier1');
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'e.yaml'), bp('gate/e@1.0', '1.0.0', 'guardrails:\n  - { id: never_share_cards, tier: 1, patterns: [], description: Never expose card numbers }\n'));
    const r = steward(['validate', 'empty-tier1'], tmp);
    expect(r.status).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual([
      'empty-tier1/e.yaml:5:49: STEWARD_BLUEPRINT_SCHEMA: must NOT have fewer than 1 items (at $.guardrails[0].patterns)',
      expect.stringMatching(/^empty-tier1\/e\.yaml:5:49: STEWARD_GATE_NOT_MECHANICAL: guardrail 'never_share_cards': a tier-1 \(hard safety\) rule must be mechanical: .*enforce nothing.*\(at \$\.guardrails\[0\]\.patterns\)$/),
    ]);
  });

  it('an unreadable blueprint (dangling symlink, invalid UTF-8) is one positioned problem among the others, not a stop', () => {
    const d = join(tmp, 'unreadable');
    mkdirSync(d, { recursive: true });
    symlinkSync(join(d, 'gone.yaml'), join(d, 'dangling.yaml'));
    writeFileSync(join(d, 'latin.yaml'), Buffer.concat([Buffer.from(bp('l@1.0', '1.0.0', 'x-note: caf')), Buffer.from([0xe9, 0x0a])]));
    writeFileSync(join(d, 'b.yaml'), bp('b@1.0', '1.0.0', 'scorng: {}\n'));
    const r = steward(['validate', 'unreadable'], tmp);
    expect(r.status).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^unreadable\/b\.yaml:4:1: STEWARD_BLUEPRINT_UNKNOWN_KEY/);
    expect(lines[1]).toMatch(/^unreadable\/dangling\.yaml:1:1: STEWARD_BLUEPRINT_SYNTAX: cannot read: dangling symlink/);
    expect(lines[2]).toMatch(/^unreadable\/latin\.yaml:4:12: STEWARD_BLUEPRINT_SYNTAX: invalid UTF-8/);
  });

  it('--config applies blueprints.workflow_limits (gate spec §11): 4 workflows and a 6-step one fail by default, pass with larger limits', () => {
    const d = join(tmp, 'limits');
    mkdirSync(d, { recursive: true });
    const wf = (id: string, n: number) => `  - id: ${id}\n    tier: 2\n    workflow: { steps: [${Array.from({ length: n }, (_, i) => `s${i}`).join(', ')}] }\n`;
    // A chain: the child's two workflows and its parent's two are four.
    writeFileSync(join(d, 'p.yaml'), bp('lim/p@1.0', '1.0.0', `guardrails:\n${wf('w1', 6)}${wf('w2', 2)}`));
    writeFileSync(join(d, 'k.yaml'), bp('lim/k@1.0', '1.0.0', `inherits: lim/p@1.0\nguardrails:\n${wf('w3', 2)}${wf('w4', 2)}`));
    const byDefault = steward(['validate', 'limits'], tmp);
    expect(byDefault.status).toBe(1);
    expect(byDefault.stdout).toMatch(/^limits\/k\.yaml:\d+:\d+: STEWARD_GATE_WORKFLOW_LIMIT: 4 workflows \(inherited ones included\); at most 3/m);
    expect(byDefault.stdout).toMatch(/^limits\/p\.yaml:\d+:\d+: STEWARD_GATE_WORKFLOW_LIMIT: workflow 'w1' has 6 steps; at most 5/m);
    writeFileSync(join(tmp, 'limits.yaml'), 'blueprints:\n  workflow_limits: { max_steps: 6, max_workflows: 4 }\n');
    const larger = steward(['validate', '--config', 'limits.yaml', 'limits'], tmp);
    expect(larger.stdout).toBe('');
    expect(larger.status).toBe(0);
    // Only the limit raised is lifted.
    writeFileSync(join(tmp, 'limits-w.yaml'), 'blueprints:\n  workflow_limits: { max_workflows: 4 }\n');
    const one = steward(['validate', '--config=limits-w.yaml', 'limits'], tmp);
    expect(one.status).toBe(1);
    expect(one.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^limits\/p\.yaml:.*STEWARD_GATE_WORKFLOW_LIMIT: workflow 'w1' has 6 steps; at most 5/)]);
    // A bad config is bad usage (exit 2), named with its position; a missing value too.
    writeFileSync(join(tmp, 'limits-bad.yaml'), 'blueprints:\n  workflow_limits: { max_workflows: 0 }\n');
    const bad = steward(['validate', '--config', 'limits-bad.yaml', 'limits'], tmp);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/limits-bad\.yaml:2:.*STEWARD_CONFIG.*max_workflows/);
    expect(steward(['validate', 'limits', '--config'], tmp).status).toBe(2);
  });

  it('exits 2 on bad arguments', () => {
    expect(steward(['validate']).status).toBe(2);
    expect(steward(['validate', '--frobnicate', 'blueprints']).status).toBe(2);
  });

  it('reports a missing PATH as a positioned problem (exit 1) and still validates the other paths', () => {
    const missing = join(tmp, 'does-not-exist');
    const r = steward(['validate', missing, 'blueprints']);
    expect(r.status).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual([`${missing}:1:1: STEWARD_BLUEPRINT_SYNTAX: cannot read: no such file or directory`]);
  });
});

describe('steward diff', () => {
  const v1 = bp(
    'd/x@1.0',
    '1.0.0',
    'checks:\n  - id: r1\n    when: { hook: tool_call }\n    rule: { condition: "args.n < 5", on_fail: { decision: flag, reason: r } }\nscoring:\n  thresholds: { ok: 0.2, nudge: 0.3, escalate: 0.4, block: 0.5 }\n',
  );
  it('a removed check needs a major bump: 1.1.0 is too small (exit 1), 2.0.0 is fine (exit 0)', () => {
    writeFileSync(join(tmp, 'v1.yaml'), v1);
    const removed = 'scoring:\n  thresholds: { ok: 0.2, nudge: 0.3, escalate: 0.4, block: 0.5 }\n';
    writeFileSync(join(tmp, 'v11.yaml'), bp('d/x@1.1', '1.1.0', removed));
    writeFileSync(join(tmp, 'v2.yaml'), bp('d/x@2.0', '2.0.0', removed));
    const small = steward(['diff', join(tmp, 'v1.yaml'), join(tmp, 'v11.yaml')]);
    expect(small.stdout).toContain("breaking: checks.r1: removed check 'r1'");
    expect(small.stdout).toContain('minimum bump: major');
    expect(small.status).toBe(1);
    expect(steward(['diff', join(tmp, 'v1.yaml'), join(tmp, 'v2.yaml')]).status).toBe(0);
  });

  it('relaxed thresholds and an added optional metric need only a minor bump', () => {
    writeFileSync(
      join(tmp, 'v12.yaml'),
      bp(
        'd/x@1.2',
        '1.2.0',
        'checks:\n  - id: r1\n    when: { hook: tool_call }\n    rule: { condition: "args.n < 5", on_fail: { decision: flag, reason: r } }\n  - id: m1\n    when: { hook: output }\n    metric: { name: m, weight: 0.5, check: { type: llm } }\nscoring:\n  thresholds: { ok: 0.25, nudge: 0.3, escalate: 0.4, block: 0.5 }\n',
      ),
    );
    const r = steward(['diff', join(tmp, 'v1.yaml'), join(tmp, 'v12.yaml')]);
    expect(r.stdout).toContain('non-breaking: checks.m1: added optional check');
    expect(r.stdout).toContain('non-breaking: scoring.thresholds.ok: ok: 0.2 -> 0.25 (relaxed)');
    expect(r.stdout).toContain('minimum bump: minor');
    expect(r.status).toBe(0);
  });

  it('exits 2 on bad arguments', () => {
    expect(steward(['diff', join(tmp, 'v1.yaml')]).status).toBe(2);
  });
});
