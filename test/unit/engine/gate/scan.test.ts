import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_RUNTIME_LIMITS, DEFAULT_GATE_SETTINGS, scanDraft, scanToolCall, tier1Scope, type GateSettings, type Tier1Rule } from '../../../../src/engine/gate/index.js';
import { stringLeaves } from '../../../../src/engine/gate/scan.js';
import type { AgentInfo, Trace } from '../../../../src/engine/types.js';
import { compileOne } from './helpers.js';

const agent: AgentInfo = { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true };
const trace = (extra: Partial<Trace> = {}): Trace => ({ trace_id: 't1', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: 'j', ...extra });
const ctx = (t: Trace = trace()) => ({ trace: t, agent, nowMs: 0 });
/** The scope of a gate with these tier-1 rules and base settings, for an agent the registry lists for `skills`. */
const scopeOf = (tier1: Tier1Rule[] = [], settings: GateSettings = DEFAULT_GATE_SETTINGS, skills?: string[]) => tier1Scope({ settings, skills: {}, tier1, workflows: [], style: [] }, skills);
const ids = (draft: string) => scanDraft(draft, ctx(), scopeOf(), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id);

describe('output scanning: default detectors (gate spec §2)', () => {
  it('card numbers need a Luhn check', () => {
    expect(ids('card 4111 1111 1111 1111')).toEqual(['credit_card']);
    expect(ids('card 4111-1111-1111-1111.')).toEqual(['credit_card']);
    expect(ids('card 5500005555555559')).toEqual(['credit_card']);
    expect(ids('order 4111 1111 1111 1112')).toEqual([]);
    expect(ids('version 1.2.3, build 20260101')).toEqual([]);
    // #20 audit: no-break spaces and dots between the groups
    expect(ids('card: 4111\u00a01111\u00a01111\u00a01111')).toEqual(['credit_card']);
    expect(ids('card 4111.1111.1111.1111')).toEqual(['credit_card']);
    expect(ids('pi is 3.14159265358979')).toEqual([]);
  });
  it('SSNs with valid area/group/serial', () => {
    expect(ids('SSN: 219-09-9998')).toEqual(['ssn']);
    expect(ids('SSN: 000-12-3456 or 666-12-3456 or 123-00-4567')).toEqual([]);
    // A bare 9-digit number is an SSN only after an SSN label.
    expect(ids('SSN: 219099998')).toEqual(['ssn']);
    expect(ids('Order 219099998 shipped.')).toEqual([]);
  });
  it('credentials and keys', () => {
    expect(ids('AWS AKIAIOSFODNN7EXAMPLQ')).toEqual(['secret']);
    expect(ids('-----BEGIN RSA PRIVATE KEY-----\nMIIE...')).toEqual(['secret']);
    expect(ids('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U')).toEqual(['secret']);
    expect(ids('The function parseTimestampWithOffset returns ms.')).toEqual([]);
    expect(ids('Use postgres://app:s3cretpw@db.internal:5432/app')).toEqual(['secret']);
    expect(ids('Use postgres://app:${DB_PASSWORD}@db.internal:5432/app')).toEqual([]);
  });
  it('blueprint patterns add to the defaults, never replace them', () => {
    const bp = compileOne('id: s@1.0\nversion: "1.0.0"\ndescription: s\nfinalization_gate:\n  safety_patterns: [ACME-\\d+]\n  keyword_blocklist: [secret project, "$$"]\n');
    const s = bp.gate!.settings;
    const hit = (d: string) => scanDraft(d, ctx(), scopeOf([], s), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => `${h.kind}:${h.id}`);
    expect(hit('ticket ACME-12 and card 4111111111111111')).toEqual(['default:credit_card', 'safety_pattern:safety_patterns[0]']);
    expect(hit('the SECRET Project')).toEqual(['keyword:secret project']);
    expect(hit('secret projection')).toEqual([]); // word boundary
    expect(hit('costs $$ a lot')).toEqual(['keyword:$$']);
  });
});

describe('fail closed: scanning that cannot finish is a hit', () => {
  it('a draft over the size limit is blocked unscanned', () => {
    const h = scanDraft('x'.repeat(101), ctx(), scopeOf(), { maxScanChars: 100 });
    expect(h).toEqual([expect.objectContaining({ kind: 'scan_limit', id: 'max_scan_chars' })]);
  });
  it('tool-call args too deep, too many leaves or too large are blocked unscanned', () => {
    const bp = compileOne('id: s@1.0\nversion: "1.0.0"\ndescription: s\nguardrails:\n  - id: no_cards\n    tier: 1\n    pattern: "4111"\n');
    const rules = bp.gate!.tier1;
    let deep: Record<string, unknown> = { v: 'x' };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const tc = (args: Record<string, unknown>) => scanToolCall(ctx(trace({ hook: 'tool_call', tool: 'x', args })), scopeOf(rules), DEFAULT_GATE_RUNTIME_LIMITS);
    expect(tc(deep)).toEqual([expect.objectContaining({ kind: 'scan_limit' })]);
    expect(tc({ xs: Array.from({ length: 10_001 }, () => 'a') })).toEqual([expect.objectContaining({ kind: 'scan_limit' })]);
    expect(tc({ a: { b: ['ok', 'card 4111'] } })).toEqual([expect.objectContaining({ kind: 'tier1', id: 'no_cards' })]);
    expect(tc({ a: 'fine' })).toEqual([]);
    expect(stringLeaves({ a: 'x'.repeat(50) }, { maxScanDepth: 5, maxScanLeaves: 5, maxScanChars: 10 })).toBeUndefined();
  });
  it('a tier-1 condition that throws fails closed', () => {
    const rule: Tier1Rule = {
      tier: 1,
      id: 'boom',
      when: () => true,
      appliesTo: ['final_answer'],
      patterns: [],
      message: 'boom rule',
      condition: { source: 'x', async: false, functions: new Set(), evaluate: () => { throw new Error('state down'); } },
    };
    const h = scanDraft('hello', ctx(), scopeOf([rule]), DEFAULT_GATE_RUNTIME_LIMITS);
    expect(h).toEqual([expect.objectContaining({ kind: 'tier1', id: 'boom', message: expect.stringMatching(/fail closed/) })]);
  });
  it('tier-1 conditions read the draft as `content` and honour `applies_to`, `when` and `skills`', () => {
    const bp = compileOne(
      'id: s@1.0\nversion: "1.0.0"\ndescription: s\nguardrails:\n  - id: no_iban\n    tier: 1\n    condition: NOT contains_entity(content, "bank_account")\n    skills: [payments]\n  - id: tools_only\n    tier: 1\n    pattern: hello\n    applies_to: [tool_call]\n',
    );
    const payments = tier1Scope(bp.gate!, ['payments']);
    const d = 'Wire to IBAN DE89 3704 0044 0532 0130 00 hello';
    expect(scanDraft(d, ctx(), payments, DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual(['no_iban']);
    expect(scanDraft(d, ctx(), tier1Scope(bp.gate!, undefined), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual([]);
    expect(scanDraft(d, ctx(), tier1Scope(bp.gate!, ['chat']), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual([]);
    // The registry's skills decide (D44): a trace naming another skill, or none, is still held to `payments`' rule.
    expect(scanDraft(d, ctx(trace({ skill_id: 'chat' })), payments, DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual(['no_iban']);
    // The agent's own `content` beside the draft changes nothing: the draft is what the condition reads.
    const beside = ctx(trace({ draft_answer: d, content: 'ok' }));
    expect(scanDraft(d, beside, payments, DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual(['no_iban']);
    const clean = ctx(trace({ draft_answer: 'done', content: d }));
    expect(scanDraft('done', clean, payments, DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual([]);
  });
  it('`when` of a tier-1 rule reads the draft view too', () => {
    const bp = compileOne('id: s@1.0\nversion: "1.0.0"\ndescription: s\nguardrails:\n  - id: exact\n    tier: 1\n    condition: "false"\n    when: { content: "send it" }\n');
    const rules = bp.gate!.tier1;
    expect(scanDraft('send it', ctx(trace({ draft_answer: 'send it', content: 'other' })), scopeOf(rules), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual(['exact']);
    expect(scanDraft('other', ctx(trace({ draft_answer: 'other', content: 'send it' })), scopeOf(rules), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id)).toEqual([]);
  });
});

describe("tier-1 scope: the registry's skills, not the trace's skill_id (D44)", () => {
  const yaml =
    'id: s@1.0\nversion: "1.0.0"\ndescription: s\nfinalization_gate:\n  safety_patterns: [ACME-\\d+]\n  keyword_blocklist: [nightingale]\n  skills:\n    payments: { safety_patterns: [{ id: iban, pattern: "DE\\\\d{20}" }], keyword_blocklist: [override] }\n    refunds: { keyword_blocklist: [chargeback] }\n    chat: { strictness: low }\nguardrails:\n  - id: pay\n    tier: 1\n    pattern: paycode\n    skills: [payments]\n  - id: all\n    tier: 1\n    pattern: anycode\n  - id: refund_tools\n    tier: 1\n    pattern: refundcode\n    skills: [refunds]\n    applies_to: [tool_call]\n';
  const bp = compileOne(yaml);
  const gate = bp.gate!;
  it('unions the patterns of every listed skill with the base, each once', () => {
    const s = tier1Scope(gate, ['payments', 'refunds', 'chat', 'unknown']);
    expect(s.safetyPatterns.map((p) => p.id)).toEqual(['safety_patterns[0]', 'iban']);
    expect(s.keywordBlocklist.map((p) => p.id)).toEqual(['nightingale', 'override', 'chargeback']);
    expect(s.rules.final_answer.map((r) => r.id)).toEqual(['pay', 'all']);
    expect(s.rules.tool_call.map((r) => r.id)).toEqual(['pay', 'all', 'refund_tools']);
    const none = tier1Scope(gate, undefined);
    expect(none.safetyPatterns.map((p) => p.id)).toEqual(['safety_patterns[0]']);
    expect(none.keywordBlocklist.map((p) => p.id)).toEqual(['nightingale']);
    expect(none.rules.tool_call.map((r) => r.id)).toEqual(['all']);
    expect(tier1Scope(gate, ['chat']).rules.final_answer.map((r) => r.id)).toEqual(['all']);
  });
  it('is built once per agent (its registry skills array) and gate, not per event', () => {
    const skills = ['payments', 'chat'];
    const a = tier1Scope(gate, skills);
    expect(tier1Scope(gate, skills)).toBe(a);
    expect(tier1Scope(gate, undefined)).toBe(tier1Scope(gate, []));
    // Another gate (a reload compiles a new one) gets its own scope.
    const reloaded = tier1Scope(compileOne(yaml).gate!, skills);
    expect(reloaded).not.toBe(a);
    expect(reloaded.keywordBlocklist.map((p) => p.id)).toEqual(a.keywordBlocklist.map((p) => p.id));
  });
  it('a tool call is held to every listed skill\'s tool rules whatever skill_id it names', () => {
    const s = tier1Scope(gate, ['payments', 'refunds']);
    const tc = (args: Record<string, unknown>, skill_id?: string) => scanToolCall(ctx(trace({ hook: 'tool_call', tool: 'x', args, ...(skill_id && { skill_id }) })), s, DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id);
    expect(tc({ a: 'refundcode' }, 'payments')).toEqual(['refund_tools']);
    expect(tc({ a: 'paycode' }, 'refunds')).toEqual(['pay']);
    expect(tc({ a: 'paycode' })).toEqual(['pay']);
    expect(scanToolCall(ctx(trace({ hook: 'tool_call', tool: 'x', args: { a: 'paycode refundcode' }, skill_id: 'payments' })), tier1Scope(gate, ['chat']), DEFAULT_GATE_RUNTIME_LIMITS)).toEqual([]);
  });
});

describe('pre-tool gate: what tier-1 patterns read on a tool call', () => {
  it('tool-call patterns scan `action` (contracts C1) and object keys, not only `args` values (D47)', () => {
    // The demo agent puts its SQL in `action.query`; a key is text the tool reads too. Both passed unscanned.
    const bp = compileOne('id: s@1.0\nversion: "1.0.0"\ndescription: s\nguardrails:\n  - id: no_drop\n    tier: 1\n    pattern: \'(?i)\\bdrop\\s+table\\b\'\n    applies_to: [tool_call]\n');
    const tc = (extra: Partial<Trace>) => scanToolCall(ctx(trace({ hook: 'tool_call', tool: 'database_query', ...extra })), scopeOf(bp.gate!.tier1), DEFAULT_GATE_RUNTIME_LIMITS).map((h) => h.id);
    expect(tc({ args: { query: 'DROP TABLE users' } })).toEqual(['no_drop']);
    expect(tc({ action: { query: 'DROP TABLE users', table: 'users' } })).toEqual(['no_drop']);
    expect(tc({ args: { 'DROP TABLE users': true } })).toEqual(['no_drop']);
    expect(tc({ action: { nested: [{ 'drop  table x': 1 }] } })).toEqual(['no_drop']);
    expect(tc({ content: 'drop table users' })).toEqual(['no_drop']);
    expect(tc({ args: { query: 'SELECT 1' }, action: { query: 'SELECT * FROM orders' } })).toEqual([]);
    // Keys count against the leaf bound like values: still fail closed.
    const wide = Object.fromEntries(Array.from({ length: 6_000 }, (_, i) => [`k${i}`, 'v']));
    expect(tc({ action: wide })).toEqual(['args']);
  });
  it('stringLeaves: keys and values, depth first; bounded', () => {
    expect(stringLeaves([{ a: 'x', b: { c: ['y'] } }, 'z'], DEFAULT_GATE_RUNTIME_LIMITS)).toEqual(['a', 'x', 'b', 'c', 'y', 'z']);
    expect(stringLeaves({ ['k'.repeat(20)]: 1 }, { maxScanDepth: 5, maxScanLeaves: 5, maxScanChars: 10 })).toBeUndefined();
  });
});
