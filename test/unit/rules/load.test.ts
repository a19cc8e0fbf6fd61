import { describe, expect, it } from 'vitest';
import { compileBlueprintSet } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { compiledFormHash, parseRuleLock, renderRuleLock, ruleLockPath, ruleTextHash } from '../../../src/engine/rules/lock.js';
import { staleLockEntries } from '../../../src/engine/rules/load.js';
import type { RuleLock, RuleLockEntry, ToolSchemas } from '../../../src/engine/rules/types.js';
import type { Trace } from '../../../src/engine/types.js';

const REFUND = 'Refunds over $500 need supervisor approval';
const VERIFY = 'Always verify identity before account access';
const bp = (rules: string, extra = '') => `id: support/refunds@1.0
version: "1.0.0"
description: t
${extra}rules:
${rules}`;
const refundRule = (tier = '') => `  - id: refund_limit
    text: ${REFUND}
    tool: process_refund${tier}
    when: { tool: process_refund }
    on_fail: { decision: escalate, reason: over the refund limit }
`;
const refundTest = (amount: number, expect: 'pass' | 'fail') => ({ source: 'llm' as const, trace: { hook: 'tool_call', tool: 'process_refund', args: { amount } }, expect, passed: true });
const TESTS = [refundTest(600, 'fail'), refundTest(100, 'pass')];
const mech = (over: Partial<RuleLockEntry> = {}): RuleLockEntry => ({ id: 'refund_limit', text_sha256: ruleTextHash(REFUND), model: 'm', kind: 'condition', dsl: 'args.amount <= 500', tests: TESTS, outcome: 'mechanical', ...over });
const WF_TESTS = [
  { source: 'llm' as const, calls: ['verify_identity', 'access_account'], expect: 'pass' as const },
  { source: 'llm' as const, calls: ['access_account'], expect: 'fail' as const },
];
const lock = (...rules: RuleLockEntry[]): RuleLock => ({ version: 1, blueprint: 'support/refunds@1.0', rules });
const compile = (text: string, side?: { lock?: RuleLock; tools?: ToolSchemas }) =>
  compileBlueprintSet([{ file: 'bp/refunds@1.0.yaml', text }], { config: defaultEngineConfig(), ...(side && { sidecars: new Map([['bp/refunds@1.0.yaml', side]]) }) });
const trace = (amount: unknown): Trace => ({ trace_id: 't', agent_id: 'a', timestamp: '2025-01-01T00:00:00Z', hook: 'tool_call', tool: 'process_refund', args: { amount } }) as Trace;
const agent = { id: 'a', tenant: 'default', tier: 'ACL-2' as const, tools: [], domains: [], registered: true };

describe('loading rules from the lock (docs/rules.md)', () => {
  it('a current mechanical entry is a rule check with the author on_fail', () => {
    const r = compile(bp(refundRule()), { lock: lock(mech()) });
    expect(r.errors.map((e) => e.format())).toEqual([]);
    expect(r.warnings).toEqual([]);
    const rule = r.set!.get('support/refunds@1.0')!.rules.find((x) => x.id === 'refund_limit')!;
    expect(rule.onFail).toEqual({ decision: 'escalate', reason: 'over the refund limit' });
    const ctx = (t: Trace) => ({ trace: t, agent, trustDebt: 0, nowMs: 0, stateNamespace: 'x' });
    expect(rule.condition.evaluate(ctx(trace(600)))).toBe(false);
    expect(rule.condition.evaluate(ctx(trace(100)))).toBe(true);
    expect(rule.when(trace(1))).toBe(true);
  });

  it('no entry: an LLM-judged text check (llm-judge metric) and a positioned warning; the LLM is never called by the loader', () => {
    const r = compile(bp(refundRule()));
    expect(r.errors).toEqual([]);
    expect(r.warnings.map((w) => w.format())).toEqual([expect.stringMatching(/^bp\/refunds@1\.0\.yaml:6:11: STEWARD_RULES_UNCOMPILED: rule 'refund_limit' has no lock entry/)]);
    const b = r.set!.get('support/refunds@1.0')!;
    expect(b.rules.some((x) => x.id === 'refund_limit')).toBe(false);
    const m = b.metrics.find((x) => x.id === 'refund_limit')!;
    expect(m.scorer).toBe('llm-judge');
    expect(String(m.parameters.prompt_template)).toContain(REFUND);
    expect(String(m.parameters.prompt_template)).toContain('{action}');
  });

  it('a text outcome is a text check without a warning; a stale entry (text changed) warns', () => {
    const text = compile(bp(refundRule()), { lock: lock(mech({ outcome: 'text', reason: 'tests failed' })) });
    expect(text.warnings).toEqual([]);
    expect(text.set!.get('support/refunds@1.0')!.metrics.some((m) => m.id === 'refund_limit')).toBe(true);
    const stale = compile(bp(refundRule()), { lock: lock(mech({ text_sha256: ruleTextHash('Refunds over $400 need approval') })) });
    expect(stale.warnings.map((w) => w.code)).toEqual(['STEWARD_RULES_STALE']);
  });

  it('tier 1 must be mechanical: missing, stale or text entries are errors with the position of the text', () => {
    for (const l of [undefined, lock(mech({ outcome: 'text', reason: 'no compile' })), lock(mech({ text_sha256: 'x' }))]) {
      const r = compile(bp(refundRule('\n    tier: 1')), l && { lock: l });
      expect(r.set).toBeUndefined();
      expect(r.errors.map((e) => e.format())).toEqual([expect.stringMatching(/^bp\/refunds@1\.0\.yaml:6:11: STEWARD_RULES_NOT_MECHANICAL: rule 'refund_limit' is tier 1/)]);
    }
    expect(compile(bp(refundRule('\n    tier: 1')), { lock: lock(mech()) }).errors).toEqual([]);
  });

  it('a process rule with a mechanical entry is an order-only tier-2 workflow of the gate', () => {
    const r = compile(bp(`  - id: verify_first\n    text: ${VERIFY}\n    tier: 2\n`), {
      lock: lock({ id: 'verify_first', text_sha256: ruleTextHash(VERIFY), model: 'm', kind: 'workflow', workflow: { steps: ['verify_identity', 'access_account'] }, tests: WF_TESTS, outcome: 'mechanical' }),
    });
    expect(r.errors).toEqual([]);
    const w = r.set!.get('support/refunds@1.0')!.gate!.workflows;
    expect(w).toEqual([expect.objectContaining({ id: 'rule.verify_first', tier: 2, steps: ['verify_identity', 'access_account'], required: false })]);
  });

  it('a locked condition that no longer type-checks against a changed schema is not mechanical', () => {
    const tools = new Map([['process_refund', { type: 'object', properties: { total: { type: 'number' } } }]]);
    const r = compile(bp(refundRule()), { lock: lock(mech()), tools });
    expect(r.warnings.map((w) => w.code)).toEqual(['STEWARD_RULES_LOCK']);
    expect(r.set!.get('support/refunds@1.0')!.metrics.some((m) => m.id === 'refund_limit')).toBe(true);
  });

  describe('a mechanical entry is re-verified at load (review finding 5)', () => {
    const at6 = /^bp\/refunds@1\.0\.yaml:6:11: STEWARD_RULES_LOCK: rule 'refund_limit': its lock entry is not trusted: /;
    const cases: [string, Partial<RuleLockEntry>, RegExp][] = [
      ['its DSL edited to true (the fail case now passes)', { dsl: 'true' }, /1 of 2 recorded test\(s\) fail against the locked DSL \(llm fail\)/],
      ['a subtly widened DSL', { dsl: 'args.amount <= 5000' }, /1 of 2 recorded test\(s\) fail/],
      ['no tests at all', { tests: [] }, /the recorded tests do not include both a complying \(pass\) and a violating \(fail\) case \(0 test\(s\)\)/],
      ['pass cases only', { dsl: 'true', tests: [refundTest(100, 'pass')] }, /do not include both/],
      ['fail cases only', { tests: [refundTest(600, 'fail')] }, /do not include both/],
    ];
    it.each(cases)('%s: a text check with a positioned STEWARD_RULES_LOCK warning', (_why, over, message) => {
      const r = compile(bp(refundRule()), { lock: lock(mech(over)) });
      expect(r.errors).toEqual([]);
      expect(r.warnings.map((w) => w.format())).toEqual([expect.stringMatching(at6)]);
      expect(r.warnings[0]!.message).toMatch(message);
      const b = r.set!.get('support/refunds@1.0')!;
      expect(b.rules.some((x) => x.id === 'refund_limit')).toBe(false);
      expect(b.metrics.find((m) => m.id === 'refund_limit')?.scorer).toBe('llm-judge');
    });
    it.each(cases)('%s, tier 1: a load error at the rule text', (_why, over, message) => {
      const r = compile(bp(refundRule('\n    tier: 1')), { lock: lock(mech(over)) });
      expect(r.set).toBeUndefined();
      expect(r.errors.map((e) => e.format())).toEqual([expect.stringMatching(at6)]);
      expect(r.errors[0]!.message).toMatch(message);
    });

    it('a workflow whose steps were swapped fails its recorded tests', () => {
      const r = compile(bp(`  - id: verify_first\n    text: ${VERIFY}\n    tier: 2\n`), {
        lock: lock({ id: 'verify_first', text_sha256: ruleTextHash(VERIFY), model: 'm', kind: 'workflow', workflow: { steps: ['access_account', 'verify_identity'] }, tests: WF_TESTS, outcome: 'mechanical' }),
      });
      expect(r.warnings.map((w) => w.message)).toEqual([expect.stringMatching(/2 of 2 recorded test\(s\) fail against the locked workflow/)]);
      expect(r.set!.get('support/refunds@1.0')!.gate?.workflows ?? []).toEqual([]);
    });

    it('dsl_sha256: a hand edit whose tests still pass loads with a STEWARD_RULES_LOCK_EDITED warning; a matching or absent hash is silent', () => {
      const edited = compile(bp(refundRule()), { lock: lock(mech({ dsl: 'args.amount < 501', dsl_sha256: compiledFormHash({ kind: 'condition', dsl: 'args.amount <= 500' }) })) });
      expect(edited.warnings.map((w) => w.format())).toEqual([expect.stringMatching(/^bp\/refunds@1\.0\.yaml:6:11: STEWARD_RULES_LOCK_EDITED: rule 'refund_limit': the locked DSL is not what `steward compile-rules` wrote/)]);
      expect(edited.set!.get('support/refunds@1.0')!.rules.some((x) => x.id === 'refund_limit')).toBe(true);
      const same = compile(bp(refundRule()), { lock: lock(mech({ dsl_sha256: compiledFormHash({ kind: 'condition', dsl: 'args.amount <= 500' }) })) });
      expect(same.warnings).toEqual([]);
      // a lock written before dsl_sha256 existed (no hash) loads as before when its tests hold
      const legacy = JSON.parse(renderRuleLock(lock(mech()))) as { rules: Record<string, unknown>[] };
      expect(legacy.rules[0]).not.toHaveProperty('dsl_sha256');
      const parsed = parseRuleLock(JSON.stringify(legacy), 'f').lock!;
      expect(compile(bp(refundRule('\n    tier: 1')), { lock: parsed }).errors).toEqual([]);
    });
  });

  it('staleLockEntries: removed rules and changed texts', () => {
    const l = lock(mech(), mech({ id: 'gone' }), mech({ id: 'changed', text_sha256: 'old' }));
    const v = { rules: [{ id: 'refund_limit', text: REFUND }, { id: 'changed', text: 'new text' }] };
    expect(staleLockEntries(v, l)).toEqual([
      { id: 'gone', why: 'no rule with this id any more' },
      { id: 'changed', why: 'the rule text changed since it was compiled' },
    ]);
  });

  it('the lock round-trips through its text, and a broken lock is a problem, not a throw', () => {
    const l = lock(mech({ dsl_sha256: 'ab', tests: [{ source: 'llm', trace: { tool: 'x' }, expect: 'pass', passed: true }] }));
    expect(parseRuleLock(renderRuleLock(l), 'f').lock).toEqual(l);
    expect(parseRuleLock('{not json', 'f.rules.lock').problem?.code).toBe('STEWARD_RULES_LOCK');
    expect(ruleLockPath('a/b@1.0.yaml')).toBe('a/b@1.0.rules.lock');
  });
});
