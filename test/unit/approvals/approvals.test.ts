import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signedAnswer } from '../../../src/cli/commands/approve.js';
import { approvalAnswerJson, approvalOutcomeJson, approvalRequestJson, parseApprovalAnswerMessage, parseApprovalMessage } from '../../../src/contracts/approvals.js';
import { ANSWER_CLOCK_SKEW_MS, apiKeyHash, checkSignedAnswer, mayAnswer, parseApproverRegistry } from '../../../src/engine/approvals/approvers.js';
import { answeredOutcome, approvalLedgerDraft, outcomeSignedBy, signOutcomeBytes, timeoutOutcome } from '../../../src/engine/approvals/outcome.js';
import { anchoredApproval, approvalFor, approvalIdOf } from '../../../src/engine/approvals/policy.js';
import { compileBlueprintSet } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import type { AgentInfo, Trace } from '../../../src/engine/types.js';

const BP = `id: pay@1.0
version: "1.0.0"
description: t
tools:
  - id: process_refund
    requires_approval: "args.amount > 500"
    approval: { timeout: 30m, role: supervisor, skills: { vip: { timeout: 5m, default_action: approve, role: vip_desk } } }
  - id: wire
    requires_approval: true
`;
const agent: AgentInfo = { id: 'a1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const call = (tool: string, amount: number, extra: Record<string, unknown> = {}): Trace => ({ trace_id: 't1', agent_id: 'a1', timestamp: 'x', hook: 'tool_call', tool, args: { amount }, ...extra }) as Trace;
const ctx = (trace: Trace) => ({ trace, agent, trustDebt: 0, nowMs: 1_000_000, stateNamespace: 'acme:a1' });

describe('requires_approval policies (gate spec §6)', () => {
  const bp = compileBlueprintSet([{ file: 'pay.yaml', text: BP }], { config: defaultEngineConfig() }).set!.get('pay@1.0')!;
  const BP2 = BP.replace('skills: { vip: { timeout: 5m, default_action: approve, role: vip_desk } }', 'skills: { vip: { timeout: 5m, default_action: approve, role: vip_desk }, gold: { timeout: 10m, default_action: approve, role: vip_desk } }');
  const bp2 = compileBlueprintSet([{ file: 'pay.yaml', text: BP2 }], { config: defaultEngineConfig() }).set!.get('pay@1.0')!;

  it('compiles per tool with defaults (1 h, deny) and per-skill overrides', () => {
    expect(bp.approvals!.map((p) => [p.tool, p.timeoutMs, p.defaultAction, p.role])).toEqual([
      ['process_refund', 1_800_000, 'deny', 'supervisor'],
      ['wire', 3_600_000, 'deny', undefined],
    ]);
  });

  it('a matching call gets a request with a deterministic id and deadline; others none', () => {
    const r = approvalFor(bp.approvals, ctx(call('process_refund', 900)), 'ev-1')!;
    expect(r).toMatchObject({ approval_id: approvalIdOf('ev-1'), tool: 'process_refund', tenant: 'acme', agent_tier: 'ACL-2', role: 'supervisor', default_action: 'deny', requested_ms: 1_000_000, deadline_ms: 2_800_000, args: { amount: 900 } });
    expect(approvalIdOf('ev-1')).toMatch(/^ap-[0-9a-f]{24}$/);
    expect(approvalIdOf('ev-2')).not.toBe(approvalIdOf('ev-1'));
    expect(approvalFor(bp.approvals, ctx(call('process_refund', 100)), 'ev-1')).toBeUndefined();
    expect(approvalFor(bp.approvals, ctx(call('lookup', 900)), 'ev-1')).toBeUndefined();
    expect(approvalFor(bp.approvals, ctx({ ...call('process_refund', 900), hook: 'output' } as Trace), 'ev-1')).toBeUndefined();
    expect(approvalFor(bp.approvals, ctx(call('wire', 1)), 'ev-1')).toMatchObject({ role: null, deadline_ms: 4_600_000 });
  });

  it("skill overrides follow the agent's registered skills, not the skill the trace claims (review finding 11)", () => {
    const as = (skills: string[] | undefined, skill_id?: string) => approvalFor(bp2.approvals, { ...ctx(call('process_refund', 900, skill_id ? { skill_id } : {})), agent: { ...agent, skills } }, 'e')!;
    // registered for vip only: vip's settings whatever the trace claims (an unlisted skill_id is not recorded)
    for (const claim of ['vip', 'other', undefined]) expect(as(['vip'], claim)).toMatchObject({ role: 'vip_desk', default_action: 'approve', deadline_ms: 1_300_000 });
    expect(as(['vip'], 'other')).toMatchObject({ skill_id: null });
    expect(as(['vip'], 'vip')).toMatchObject({ skill_id: 'vip' });
    // registered for vip and plain (no override: the base): claiming vip no longer picks the laxer one —
    // deny wins, the longest timeout, the roles disagree so the base role
    expect(as(['vip', 'plain'], 'vip')).toMatchObject({ skill_id: 'vip', role: 'supervisor', default_action: 'deny', deadline_ms: 1_000_000 + 1_800_000 });
    expect(as(['vip', 'plain'], 'plain')).toMatchObject({ skill_id: 'plain', role: 'supervisor', default_action: 'deny', deadline_ms: 1_000_000 + 1_800_000 });
    // two overrides that agree on the role and the default: that role, approve, the longer timeout
    expect(as(['vip', 'gold'], 'vip')).toMatchObject({ role: 'vip_desk', default_action: 'approve', deadline_ms: 1_000_000 + 600_000 });
    // no registered skills: the base policy
    expect(as(undefined, 'vip')).toMatchObject({ skill_id: null, role: 'supervisor', default_action: 'deny', deadline_ms: 2_800_000 });
  });

  it('the deadline counts from the broker time of the trace, not the event time the agent stamped', () => {
    // the agent stamped its trace 5 min in the past (within the clamp): the engine's request starts then
    const r = approvalFor(bp.approvals, { ...ctx(call('process_refund', 900)), nowMs: 1_000_000 - 300_000 }, 'e')!;
    expect(r.deadline_ms - r.requested_ms).toBe(1_800_000);
    const a = anchoredApproval(r, 1_000_000);
    expect(a).toMatchObject({ requested_ms: 1_000_000, deadline_ms: 2_800_000, approval_id: r.approval_id });
    expect(anchoredApproval(r, Number.NaN)).toBe(r);
  });

  it('bad timeouts and stateful triggers are load errors with positions', () => {
    const r = compileBlueprintSet([{ file: 'b.yaml', text: BP.replace('timeout: 30m', 'timeout: soon').replace('requires_approval: true', "requires_approval: \"exceeds_rate('w', 3, '1m')\"") }], { config: defaultEngineConfig() });
    expect(r.errors.map((e) => e.format())).toEqual([
      expect.stringMatching(/^b\.yaml:7:\d+: STEWARD_APPROVAL_CONFIG: tool 'process_refund': approval\.timeout must be a duration/),
      expect.stringMatching(/^b\.yaml:9:\d+: STEWARD_APPROVAL_CONFIG: tool 'wire': requires_approval must be decided from the call alone/),
    ]);
  });
});

describe('approvers: registry, roles per tenant/tier, signed answers', () => {
  const k1 = generateKeyPairSync('ed25519');
  const k2 = generateKeyPairSync('ed25519');
  const pem = (k: typeof k1) => JSON.stringify(k.publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const priv = (k: typeof k1) => k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const reg = parseApproverRegistry(
    `approvers:\n  - { id: alice, public_keys: [${pem(k1)}], api_keys: ["${apiKeyHash('k-alice')}"], roles: [{ role: supervisor, tenants: [acme], tiers: [ACL-2] }] }\n  - { id: carol, public_keys: [${pem(k2)}], roles: [supervisor] }\n`,
    'approvers.yaml',
  );
  const req = approvalFor(compileBlueprintSet([{ file: 'pay.yaml', text: BP }], { config: defaultEngineConfig() }).set!.get('pay@1.0')!.approvals, ctx(call('process_refund', 900)), 'ev')!;

  it('roles hold for their tenants and tiers only; a request without role takes any role', () => {
    const alice = reg.approvers.get('alice')!;
    expect(mayAnswer(alice, req)).toBe(true);
    expect(mayAnswer(alice, { ...req, tenant: 'other' })).toBe(false);
    expect(mayAnswer(alice, { ...req, agent_tier: 'ACL-4' })).toBe(false);
    expect(mayAnswer(alice, { ...req, role: 'vip_desk' })).toBe(false);
    expect(mayAnswer(alice, { ...req, role: null })).toBe(true);
    expect(reg.byApiKey('k-alice')?.id).toBe('alice');
    expect(reg.byApiKey('k-nobody')).toBeUndefined();
  });

  it('a signed answer is checked: the approver, the signature over every deciding field, the role', () => {
    const a = signedAnswer({ approval_id: req.approval_id, decision: 'approve', approver: 'alice', ts_ms: req.requested_ms + 5 }, priv(k1));
    expect(checkSignedAnswer(reg, a, req)).toMatchObject({ ok: true });
    expect(checkSignedAnswer(reg, { ...a, decision: 'deny' }, req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_SIGNATURE' });
    expect(checkSignedAnswer(reg, { ...a, approval_id: 'ap-other' }, { ...req, approval_id: 'ap-other' })).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_SIGNATURE' });
    expect(checkSignedAnswer(reg, signedAnswer({ ...a, approver: 'alice' }, priv(k2)), req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_SIGNATURE' });
    expect(checkSignedAnswer(reg, { ...a, signature: undefined }, req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_SIGNATURE' });
    expect(checkSignedAnswer(reg, { ...a, approver: 'mallory' }, req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_UNKNOWN_APPROVER' });
    expect(checkSignedAnswer(reg, a, { ...req, tenant: 'globex' })).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_FORBIDDEN' });
  });

  it('a signed answer counts only while its request is open: signed before it (beyond the clock skew) or after its deadline is stale', () => {
    const at = (ts: number) => signedAnswer({ approval_id: req.approval_id, decision: 'approve', approver: 'alice', ts_ms: ts }, priv(k1));
    expect(checkSignedAnswer(reg, at(req.requested_ms - ANSWER_CLOCK_SKEW_MS), req)).toMatchObject({ ok: true });
    expect(checkSignedAnswer(reg, at(req.deadline_ms), req)).toMatchObject({ ok: true });
    expect(checkSignedAnswer(reg, at(req.requested_ms - ANSWER_CLOCK_SKEW_MS - 1), req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_STALE' });
    expect(checkSignedAnswer(reg, at(req.deadline_ms + 1), req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_STALE' });
    // a year-old captured answer replayed against a new request with the same id
    expect(checkSignedAnswer(reg, at(5), req)).toMatchObject({ ok: false, code: 'STEWARD_APPROVAL_STALE' });
  });

  it('registry problems are errors', () => {
    expect(() => parseApproverRegistry('approvers: [{ id: x, api_keys: [plain-text] }]', 'f')).toThrow(/stored hashed/);
    expect(() => parseApproverRegistry('approvers: [{ id: x }, { id: x }]', 'f')).toThrow(/listed twice/);
    expect(() => parseApproverRegistry('approvers: [{ id: x, public_keys: [nope] }]', 'f')).toThrow(/no Ed25519 public key/);
  });

  it("an outcome signed with Steward's key verifies with its public key only, over the exact bytes", () => {
    const value = approvalOutcomeJson(answeredOutcome(req, { decision: 'approve', approver: 'alice' }, 'kafka', 7));
    const sig = signOutcomeBytes(value, priv(k1));
    const pub1 = k1.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const pub2 = k2.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(outcomeSignedBy(Buffer.from(value), sig, [pub2, pub1])).toBe(true);
    expect(outcomeSignedBy(Buffer.from(value), sig, [pub2])).toBe(false);
    expect(outcomeSignedBy(Buffer.from(value.replace('"approve"', '"deny"')), sig, [pub1])).toBe(false);
    for (const bad of [undefined, '', 'nocolon', `${sig.split(':')[0]}:!!!`]) expect(outcomeSignedBy(Buffer.from(value), bad, [pub1])).toBe(false);
  });

  it('outcomes, ledger drafts and the acgp.approvals messages round-trip', () => {
    const o = answeredOutcome(req, { decision: 'approve', approver: 'alice', reason: 'ok' }, 'kafka', 7);
    expect(o).toMatchObject({ status: 'approved', decision: 'approve', via: 'kafka', decided_ms: 7 });
    const t = timeoutOutcome(req, 9);
    expect(t).toMatchObject({ status: 'timed_out', decision: 'deny', approver: null, via: 'timeout' });
    expect(approvalLedgerDraft(t)).toMatchObject({ entry_id: `ap:${req.approval_id}`, type: 'POLICY_DECISION', agent_id: 'a1', tenant: 'acme', ts_ms: 9, payload: { source: 'approval', status: 'timed_out' } });
    expect(parseApprovalMessage(approvalOutcomeJson(o))).toEqual({ kind: 'outcome', ...o });
    expect(parseApprovalMessage(approvalRequestJson(req))).toEqual({ kind: 'request', ...req });
    const a = signedAnswer({ approval_id: 'x', decision: 'deny', approver: 'alice', ts_ms: 1 }, priv(k1));
    expect(parseApprovalMessage(approvalAnswerJson(a))).toEqual({ kind: 'answer', ...a });
    // the answers topic carries answers only: a request or an outcome there is refused
    expect(parseApprovalAnswerMessage(approvalAnswerJson(a))).toEqual({ kind: 'answer', ...a });
    for (const other of [approvalOutcomeJson(o), approvalRequestJson(req)]) expect(() => parseApprovalAnswerMessage(other)).toThrow(expect.objectContaining({ code: 'STEWARD_APPROVAL_MESSAGE' }));
    for (const bad of ['nope', '{"kind":"answer","approval_id":"x","decision":"maybe","approver":"a","ts_ms":1}', '{"kind":"vote"}', '[]'])
      expect(() => parseApprovalMessage(bad)).toThrow(expect.objectContaining({ code: 'STEWARD_APPROVAL_MESSAGE' }));
  });
});
