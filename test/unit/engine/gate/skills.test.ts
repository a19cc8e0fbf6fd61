/**
 * Which skills hold a job at the gate (spec-decisions D46, src/engine/gate/skills.ts): the workflows a job
 * engaged (by their last step) and those it is held to (that step ran, or the skill is named), the strictest judge settings over several skills, and the audit's probe through StewardEngine (a
 * refunds agent naming chat, or nothing, on a refund before identity). The golden cases in
 * test/golden/gate/skill-workflows.yaml cover the gate's answers.
 */
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { FinalizationGate, MemoryGateJobStore, emptyJobState, type GateJobState, type GateToolCall } from '../../../../src/engine/gate/index.js';
import { gateScope, lastStepCall, strictestSettings } from '../../../../src/engine/gate/skills.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';
import { compileOne, ScriptedLlm } from './helpers.js';

const BP = `id: t/sk@1.0
version: "1.0.0"
description: skills
finalization_gate:
  strictness: high
  on_judge_error: finalize
  skills:
    chat: { enabled: false, strictness: low, prompt: lite }
    refunds:
      strictness: medium
      on_judge_error: block
      custom_reason_codes: [MISSING_ORDER_ID, { code: REFUND_POLICY_VIOLATION, hard_fail: true }]
      intents: { REFUND_REQUEST: { required_elements: [order id, amount] } }
    billing:
      custom_reason_codes: [{ code: MISSING_ORDER_ID, hard_fail: true }]
      intents: { REFUND_REQUEST: { required_elements: [amount, invoice] } }
guardrails:
  - id: verify_then_refund
    tier: 2
    skills: [refunds]
    workflow: { steps: [verify_identity, lookup_order, issue_refund], required: true }
  - id: audit_only
    tier: 2
    skills: [billing]
    workflow: { steps: [write_audit], required: true }
`;
const call = (tool: string, blocked = false): GateToolCall => ({ event_id: `e-${tool}`, tool, ts_ms: 0, blocked });

describe('gateScope / lastStepCall / strictestSettings (D46)', () => {
  const bp = compileOne(BP);
  const gate = bp.gate!;
  const wf = (id: string) => gate.workflows.find((w) => w.id === id)!;

  it('a workflow is engaged by a call of its last step: ran, or refused; earlier steps engage nothing', () => {
    const w = wf('verify_then_refund');
    expect(lastStepCall(w, [call('verify_identity')], undefined)).toBe(null);
    // probe-wf [B]: identity and an order looked up, no refund asked for.
    expect(lastStepCall(w, [call('verify_identity'), call('lookup_order')], undefined)).toBe(null);
    expect(lastStepCall(w, [], [['verify_identity', 'lookup_order']])).toBe(null);
    expect(lastStepCall(w, [call('issue_refund', true)], undefined)).toBe('refused');
    expect(lastStepCall(w, [call('issue_refund', true), call('issue_refund')], undefined)).toBe('ran');
    // The call itself pushed out of the kept calls: steps_done still holds the whole workflow.
    expect(lastStepCall(w, [], [['verify_identity', 'lookup_order', 'issue_refund']])).toBe('ran');
    expect(lastStepCall(wf('audit_only'), [call('write_audit')], undefined)).toBe('ran');
    expect(lastStepCall(wf('audit_only'), [call('other')], undefined)).toBe(null);
  });

  it('the job, not the label: an engaged skill joins the named one; required only when the last step ran, or named and never refused', () => {
    const state = (calls: GateToolCall[], done?: string[][]): GateJobState => ({ ...emptyJobState({ tenant: 't', agentId: 'a', jobId: 'j' }, 0), tool_calls: calls, ...(done && { steps_done: done }) });
    const all = ['refunds', 'billing', 'chat'];
    const ids = (s: { workflows: readonly { id: string }[] }) => s.workflows.map((w) => w.id);
    expect(gateScope(gate, 'chat', all, state([call('verify_identity'), call('lookup_order')]))).toMatchObject({ skillId: 'chat', skills: ['chat'], workflows: [] });
    // Refused (the audit's refund before identity, or an approval denied): the refunds judge, not the workflow.
    const refused = gateScope(gate, 'chat', all, state([call('issue_refund', true)]));
    expect(refused).toMatchObject({ skillId: 'refunds', skills: ['chat', 'refunds'], workflows: [] });
    expect(gateScope(gate, 'refunds', all, state([call('verify_identity'), call('lookup_order'), call('issue_refund', true)]))).toMatchObject({ skillId: 'refunds', skills: ['refunds'], workflows: [] });
    // Ran: the workflow too.
    const ran = gateScope(gate, 'chat', all, state([call('issue_refund')], [['verify_identity', 'lookup_order', 'issue_refund']]));
    expect(ran).toMatchObject({ skillId: 'refunds', skills: ['chat', 'refunds'] });
    expect(ids(ran)).toEqual(['verify_then_refund']);
    expect(gateScope(gate, undefined, ['chat'], state([call('issue_refund', true)]))).toMatchObject({ skillId: null, skills: [], workflows: [] });
    expect(gateScope(gate, 'refunds', ['chat'], undefined)).toMatchObject({ skillId: null, skills: [] });
    // Named and never refused: required, as before (the agent's word adds rules).
    expect(ids(gateScope(gate, 'refunds', all, undefined))).toEqual(['verify_then_refund']);
    expect(ids(gateScope(gate, 'refunds', all, state([call('verify_identity'), call('lookup_order')])))).toEqual(['verify_then_refund']);
  });

  it('several skills: a judge if any wants one, the highest strictness, every custom code and intent, the most closed on_judge_error; one object per combination', () => {
    const { settings, skillId } = strictestSettings(gate, ['chat', 'refunds', 'billing']);
    // chat has no judge; billing (the base: high) outranks refunds (medium) and leads.
    expect(skillId).toBe('billing');
    expect(settings).toMatchObject({ enabled: true, strictness: 'high', onJudgeError: 'block', prompt: gate.skills.billing!.prompt });
    expect(settings.customReasonCodes).toEqual([
      { code: 'MISSING_ORDER_ID', hardFail: true },
      { code: 'REFUND_POLICY_VIOLATION', hardFail: true },
    ]);
    expect(settings.intents.REFUND_REQUEST).toEqual(['order id', 'amount', 'invoice']);
    expect(strictestSettings(gate, ['chat', 'refunds', 'billing']).settings).toBe(settings);
    expect(strictestSettings(gate, ['refunds']).settings).toBe(gate.skills.refunds);
    expect(strictestSettings(gate, ['chat', 'refunds'])).toMatchObject({ skillId: 'refunds', settings: { enabled: true, strictness: 'medium', prompt: gate.skills.refunds!.prompt } });
  });
});

describe('the audit probe through StewardEngine (audit20-r2 finding 3)', () => {
  const PROBE = `id: t/sk@1.0
version: "1.0.0"
description: skills
finalization_gate:
  strictness: high
  skills:
    chat: { enabled: false }
guardrails:
  - id: verify_then_refund
    tier: 2
    skills: [refunds]
    workflow: { steps: [verify_identity, issue_refund], required: true }
`;
  const AGENTS = `agents:
  - { id: a1, tenant: acme, tier: ACL-2, tools: [verify_identity, issue_refund], domains: [], skills: [refunds, chat] }
`;
  it('a refund before identity is blocked under chat or no skill_id, and that job\'s answer is judged with the refunds settings', async () => {
    const config = defaultEngineConfig();
    const set = compileBlueprintSet([{ file: 's.yaml', text: PROBE }], { config }).set!;
    const { registry } = parseAgentRegistry(AGENTS, 'agents.yaml');
    const llm = new ScriptedLlm();
    const e = new StewardEngine({ blueprints: () => set, registry: registry!, config, trustDebt: new MemoryTrustDebtStore(), engineVersion: 't', gate: new FinalizationGate({ jobStore: new MemoryGateJobStore(), llm }) });
    const T = Date.UTC(2026, 6, 1);
    for (const [n, extra] of [['chat', { skill_id: 'chat' }], ['none', {}]] as const) {
      const d = await e.decide({ trace_id: `c-${n}`, agent_id: 'a1', timestamp: new Date(T).toISOString(), hook: 'tool_call', job_id: `job-${n}`, tool: 'issue_refund', args: { amount: 900 }, ...extra }, T, `ev-c-${n}`);
      expect(d.intervention, n).toBe('block');
      expect(d.rules.filter((r) => !r.passed).map((r) => r.id)).toEqual(['gate:workflow:verify_then_refund']);
      llm.queue.push('{"quality_score":0.2,"verdict":"FAIL","reason_codes":["UNSUPPORTED_SPECIFICS"],"fix_mode":"NEEDS_NEW_EVIDENCE","missing_requirements":["no refund was issued"]}');
      const o = await e.finalize({ trace_id: `f-${n}`, agent_id: 'a1', timestamp: new Date(T).toISOString(), hook: 'final_answer', job_id: `job-${n}`, draft_answer: 'Refund of $900 issued.', ...extra } as Trace, T, `ev-f-${n}`);
      // chat (enabled: false) is named, yet the refused refund brings the refunds judge.
      expect(o, n).toMatchObject({ verdict: 'FAIL', judged_by: 'llm', skill_id: 'refunds', hits: [] });
    }
    expect(llm.requests).toHaveLength(2);
  });
});
