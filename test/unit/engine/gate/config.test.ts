import { describe, expect, it } from 'vitest';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { workflowToolWarnings } from '../../../../src/engine/gate/index.js';
import { gateHookCheckWarnings } from '../../../../src/engine/gate/config.js';
import type { AgentInfo } from '../../../../src/engine/types.js';

const compile = (files: Record<string, string>, gateLimits?: { maxWorkflowSteps: number; maxWorkflows: number }) =>
  compileBlueprintSet(
    Object.entries(files).map(([file, text]) => ({ file, text })),
    { config: defaultEngineConfig(), ...(gateLimits && { gateLimits }) },
  );
const head = (id: string, extra = '') => `id: ${id}@1.0\nversion: "1.0.0"\ndescription: t\n${extra}`;
const formatted = (r: ReturnType<typeof compile>) => r.errors.map((e) => e.format());

describe('finalization_gate / guardrails: compile and validation (docs/gate.md)', () => {
  it('compiles the settings with defaults and per-skill overrides (lists add to the base)', () => {
    const r = compile({
      'a.yaml': head(
        'a',
        `finalization_gate:
  strictness: high
  prompt: lite
  custom_reason_codes: [MISSING_ORDER_ID, { code: REFUND_POLICY_VIOLATION, hard_fail: true }]
  intents:
    REFUND_REQUEST: { required_elements: [order id, refund amount] }
  safety_patterns: ['\\bACME-\\d+\\b']
  skills:
    refunds: { strictness: low, safety_patterns: [{ id: iban, pattern: 'IBAN' }] }
`,
      ),
    });
    expect(formatted(r)).toEqual([]);
    const g = r.set!.get('a@1.0')!.gate!;
    expect(g.settings).toMatchObject({ enabled: true, maxRetries: 2, strictness: 'high', prompt: 'lite', onJudgeError: 'escalate' });
    expect(g.settings.customReasonCodes).toEqual([{ code: 'MISSING_ORDER_ID', hardFail: false }, { code: 'REFUND_POLICY_VIOLATION', hardFail: true }]);
    expect(g.settings.intents).toEqual({ REFUND_REQUEST: ['order id', 'refund amount'] });
    expect(g.skills.refunds!.strictness).toBe('low');
    expect(g.skills.refunds!.prompt).toBe('lite');
    expect(g.skills.refunds!.safetyPatterns.map((p) => p.id)).toEqual(['safety_patterns[0]', 'iban']);
  });

  it('a tier-1 rule that is not mechanical is an error at its position', () => {
    const r = compile({ 'b.yaml': head('b', `guardrails:\n  - id: no_cards\n    tier: 1\n    text: Never expose card numbers\n`) });
    expect(formatted(r)).toEqual([expect.stringMatching(/^b\.yaml:7:11: STEWARD_GATE_NOT_MECHANICAL: guardrail 'no_cards': a tier-1 \(hard safety\) rule must be mechanical/)]);
    expect(r.errors[0]!.position?.path).toBe('$.guardrails[0].text');
  });

  it('a tier-1 rule with `patterns: []` and no condition enforces nothing: rejected at its position (D47)', () => {
    const r = compile({ 'e.yaml': head('e', `guardrails:\n  - id: never_share_cards\n    tier: 1\n    patterns: []\n    description: Never expose card numbers\n`) });
    expect(formatted(r)).toEqual([
      'e.yaml:7:15: STEWARD_BLUEPRINT_SCHEMA: must NOT have fewer than 1 items (at $.guardrails[0].patterns)',
      expect.stringMatching(/^e\.yaml:7:15: STEWARD_GATE_NOT_MECHANICAL: guardrail 'never_share_cards': a tier-1 \(hard safety\) rule must be mechanical: .*`patterns: \[\]` lists none: the rule would enforce nothing/),
    ]);
    expect(r.set).toBeUndefined();
    // Flow style (the audit's probe), and `skills: []` (a rule that holds no agent) too.
    const flow = compile({ 'f.yaml': head('f', `guardrails:\n  - { id: never_share_cards, tier: 1, patterns: [], description: Never expose card numbers }\n`) });
    expect(formatted(flow)).toContainEqual(expect.stringMatching(/^f\.yaml:5:49: STEWARD_GATE_NOT_MECHANICAL: guardrail 'never_share_cards'/));
    const noSkills = compile({ 'g.yaml': head('g', `guardrails:\n  - { id: no_x, tier: 1, pattern: x, skills: [] }\n`) });
    expect(formatted(noSkills)).toEqual(['g.yaml:5:46: STEWARD_BLUEPRINT_SCHEMA: must NOT have fewer than 1 items (at $.guardrails[0].skills)']);
    // A condition or one pattern is mechanical.
    expect(formatted(compile({ 'h.yaml': head('h', `guardrails:\n  - { id: a, tier: 1, patterns: ['x'] }\n  - { id: b, tier: 1, condition: 'tool != "x"' }\n`) }))).toEqual([]);
  });
  it('a tier-1 condition must compile and be stateless; tier-1 regexes are RE2', () => {
    const r = compile({
      'c.yaml': head(
        'c',
        `guardrails:
  - id: rate
    tier: 1
    condition: NOT exceeds_rate(agent_id, 5, "1m")
  - id: bad_dsl
    tier: 1
    condition: "tool == "
  - id: bad_re
    tier: 1
    pattern: '(?<=x)y'
finalization_gate:
  safety_patterns: ['(a']
`,
      ),
    });
    const f = formatted(r);
    expect(f.some((l) => /^c\.yaml:7:16: STEWARD_GATE_NOT_MECHANICAL: guardrail 'rate': tier-1 conditions must be stateless/.test(l)), f.join('\n')).toBe(true);
    expect(f.some((l) => /^c\.yaml:10:\d+: STEWARD_DSL_PARSE/.test(l)), f.join('\n')).toBe(true);
    expect(f.some((l) => /^c\.yaml:13:14: STEWARD_DSL_REGEX.*\(at \$\.guardrails\[2\]\.pattern\)$/.test(l)), f.join('\n')).toBe(true);
    expect(f.some((l) => /^c\.yaml:15:21: STEWARD_DSL_REGEX/.test(l)), f.join('\n')).toBe(true);
  });

  it('tier shape errors: tier 2 needs a workflow, tier 3 only text; unknown keys keep the schema error', () => {
    const r = compile({
      'd.yaml': head(
        'd',
        `guardrails:
  - id: wf
    tier: 2
    pattern: x
  - id: st
    tier: 3
    text: Be kind
    pattern: y
finalization_gate:
  strictnes: high
`,
      ),
    });
    const f = formatted(r);
    expect(f).toContainEqual(expect.stringMatching(/^d\.yaml:5:5: STEWARD_GATE_CONFIG: guardrail 'wf': a tier-2 \(process\) guardrail needs `workflow/));
    expect(f).toContainEqual(expect.stringMatching(/^d\.yaml:8:5: STEWARD_GATE_CONFIG: guardrail 'st': tier 3 is soft guidance only/));
    expect(f).toContainEqual(expect.stringMatching(/^d\.yaml:13:3: STEWARD_BLUEPRINT_UNKNOWN_KEY: unknown key 'strictnes' \(did you mean 'strictness'\?\)/));
  });

  it('workflow limits (gate spec §11) are checked at load with positions, inherited workflows counted; configurable', () => {
    const wf = (id: string, n: number) => `  - id: ${id}\n    tier: 2\n    workflow: { steps: [${Array.from({ length: n }, (_, i) => `s${i}`).join(', ')}] }\n`;
    const parent = head('p', `guardrails:\n${wf('w1', 6)}${wf('w2', 2)}`);
    const child = head('k', `inherits: p@1.0\nguardrails:\n${wf('w3', 2)}${wf('w4', 2)}`);
    const r = compile({ 'p.yaml': parent, 'k.yaml': child });
    const f = formatted(r);
    expect(f).toContainEqual(expect.stringMatching(/^p\.yaml:7:24: STEWARD_GATE_WORKFLOW_LIMIT: workflow 'w1' has 6 steps; at most 5/));
    expect(f).toContainEqual(expect.stringMatching(/^k\.yaml:9:5: STEWARD_GATE_WORKFLOW_LIMIT: 4 workflows \(inherited ones included\); at most 3/));
    expect(formatted(compile({ 'p.yaml': parent, 'k.yaml': child }, { maxWorkflowSteps: 6, maxWorkflows: 4 }))).toEqual([]);
  });

  it('guardrails append through inheritance (a child cannot reuse an id); safety lists append, scalars override', () => {
    const parent = head('p', `guardrails:\n  - id: g1\n    tier: 3\n    text: Be kind\nfinalization_gate:\n  strictness: high\n  safety_patterns: [AAA]\n  keyword_blocklist: [alpha]\n`);
    const child = head('k', `inherits: p@1.0\nguardrails:\n  - id: g2\n    tier: 3\n    text: Be brief\nfinalization_gate:\n  strictness: low\n  safety_patterns: [BBB]\n`);
    const r = compile({ 'p.yaml': parent, 'k.yaml': child });
    expect(formatted(r)).toEqual([]);
    const g = r.set!.get('k@1.0')!.gate!;
    expect(g.style.map((s) => s.text)).toEqual(['Be kind', 'Be brief']);
    expect(g.settings.strictness).toBe('low');
    expect(g.settings.safetyPatterns.map((p) => p.source)).toEqual(['AAA', 'BBB']);
    expect(g.settings.keywordBlocklist.map((p) => p.id)).toEqual(['alpha']);
    const dup = compile({ 'p.yaml': parent, 'k.yaml': child.replace('id: g2', 'id: g1') });
    expect(formatted(dup)).toContainEqual(expect.stringMatching(/^k\.yaml:6:9: STEWARD_BLUEPRINT_DUPLICATE: guardrail id 'g1' is already defined by p@1\.0\.0/));
  });

  it('custom intents and reason codes cannot reuse a built-in name', () => {
    const r = compile({ 'n.yaml': head('n', `finalization_gate:\n  custom_reason_codes: [OVERLY_GENERIC]\n  intents:\n    REPO_ORIENTATION: { required_elements: [x] }\n`) });
    expect(formatted(r)).toEqual([
      expect.stringMatching(/^n\.yaml:5:25: STEWARD_GATE_CONFIG: reason code 'OVERLY_GENERIC' is built in/),
      expect.stringMatching(/^n\.yaml:7:5: STEWARD_GATE_CONFIG: intent 'REPO_ORIENTATION' is built in/),
    ]);
  });

  it('workflowToolWarnings: a step naming a tool no registered agent lists', () => {
    const r = compile({ 'w.yaml': head('w', `guardrails:\n  - id: wf\n    tier: 2\n    workflow: { steps: [verify_identity, access_acount] }\n`) });
    const agents: AgentInfo[] = [{ id: 'a', tenant: 't', tier: 'ACL-2', tools: ['verify_identity', 'access_account'], domains: [], registered: true }];
    const w = workflowToolWarnings(r.set!.blueprints, agents);
    expect(w.map((e) => e.format())).toEqual([expect.stringMatching(/^w\.yaml:7:24: STEWARD_GATE_UNKNOWN_TOOL: workflow 'wf' step 'access_acount' names a tool that no agent/)]);
  });

  it('gateHookCheckWarnings: checks and tripwires naming final_answer or user_feedback never run (D50); a when without hook (or not on these) is not reported', () => {
    const checks = [
      'checks:',
      '  - id: on_answer',
      '    when: { hook: final_answer }',
      '    rule: { condition: NOT (content contains "x"), on_fail: { decision: block, reason: x } }',
      '  - id: on_both',
      '    when: { hook: [output, user_feedback] }',
      '    rule: { condition: NOT (content contains "x"), on_fail: { decision: block, reason: x } }',
      '  - id: any_hook',
      '    when: { tool: read_file }',
      '    rule: { condition: NOT (content contains "x"), on_fail: { decision: block, reason: x } }',
      '  - id: on_output',
      '    when: { hook: output }',
      '    rule: { condition: NOT (content contains "x"), on_fail: { decision: block, reason: x } }',
      '',
    ].join('\n');
    const r = compile({ 'h.yaml': head('h', checks) });
    expect(formatted(r)).toEqual([]);
    expect(gateHookCheckWarnings(r.set!.blueprints).map((e) => e.format())).toEqual([
      expect.stringMatching(/^h\.yaml:5:5: STEWARD_GATE_HOOK_UNCHECKED: check 'on_answer' names hook final_answer, which the finalization gate alone answers/),
      expect.stringMatching(/^h\.yaml:8:5: STEWARD_GATE_HOOK_UNCHECKED: check 'on_both' names hook user_feedback/),
    ]);
  });

  it('a blueprint without the blocks gets the defaults (the gate still runs tier 1)', () => {
    const r = compile({ 'e.yaml': head('e') });
    expect(r.set!.get('e@1.0')!.gate).toMatchObject({ settings: { enabled: true, maxRetries: 2, strictness: 'medium', prompt: 'A' }, tier1: [], workflows: [], style: [] });
  });
});
