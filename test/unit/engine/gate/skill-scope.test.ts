/**
 * Hard safety by the registry's skills through the engine (spec-decisions D44): StewardEngine.decide() runs the
 * pre-tool gate of a job's tool call as the tripwire stage does, and finalize() the gate on the draft, with the
 * agent from the registry (agents.yaml `skills:`). A trace naming the lax skill, or none, is held to the strict
 * skill's tier-1 rules; an agent the registry lists only for the lax skill is not. (The golden cases in
 * test/golden/gate/skill-scope.yaml cover the gate itself.)
 */
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { FinalizationGate, MemoryGateJobStore } from '../../../../src/engine/gate/index.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';

const BP = `id: t/skills@1.0
version: "1.0.0"
description: skill scope
finalization_gate:
  skills:
    payments: { keyword_blocklist: [wire override] }
    chat: { strictness: low }
guardrails:
  - { id: no_prod_drop, tier: 1, skills: [payments], when: { hook: tool_call }, condition: 'NOT (tool == "drop_table" AND args.env == "production")' }
`;
const AGENTS = `agents:
  - { id: both, tenant: acme, tier: ACL-2, tools: [drop_table], domains: [], skills: [payments, chat] }
  - { id: lax, tenant: acme, tier: ACL-2, tools: [drop_table], domains: [], skills: [chat] }
`;

function engine() {
  const config = defaultEngineConfig();
  const set = compileBlueprintSet([{ file: 's.yaml', text: BP }], { config }).set!;
  const { registry, errors } = parseAgentRegistry(AGENTS, 'agents.yaml');
  expect(errors).toEqual([]);
  return new StewardEngine({ blueprints: () => set, registry: registry!, config, trustDebt: new MemoryTrustDebtStore(), engineVersion: 't', gate: new FinalizationGate({ jobStore: new MemoryGateJobStore() }) });
}

const T = Date.UTC(2026, 6, 1);
const call = (agent: string, id: string, extra: Partial<Trace> = {}): Trace => ({ trace_id: id, agent_id: agent, timestamp: new Date(T).toISOString(), hook: 'tool_call', job_id: 'j1', tool: 'drop_table', args: { env: 'production' }, ...extra });
const failed = (d: { rules: { id: string; passed: boolean }[] }) => d.rules.filter((r) => !r.passed).map((r) => r.id);

describe('tier 1 follows the registry, not skill_id (D44), through the engine', () => {
  it('decide(): a tool call naming the lax skill, or none, is blocked by the strict skill\'s tier-1 rule', async () => {
    const e = engine();
    for (const [i, extra] of [{ skill_id: 'chat' }, {}, { skill_id: 'payments' }].entries()) {
      const d = await e.decide(call('both', `c${i}`, extra), T, `ev-c${i}`);
      expect(d.intervention, JSON.stringify(extra)).toBe('block');
      expect(failed(d)).toContain('gate:tier1:no_prod_drop');
    }
    const lax = await e.decide(call('lax', 'l1', { skill_id: 'payments' }), T, 'ev-l1');
    expect(failed(lax)).not.toContain('gate:tier1:no_prod_drop');
  });
  it('finalize(): the strict skill\'s keyword blocks a draft whatever skill the answer names', async () => {
    const e = engine();
    const fa = (agent: string, id: string, skill_id?: string): Trace => ({ trace_id: id, agent_id: agent, timestamp: new Date(T).toISOString(), hook: 'final_answer', job_id: `job-${id}`, draft_answer: 'Use the wire override form.', ...(skill_id && { skill_id }) });
    expect(await e.finalize(fa('both', 'f1', 'chat'), T, 'ev-f1')).toMatchObject({ action: 'block', judged_by: 'patterns', skill_id: 'chat', hits: [{ kind: 'keyword', id: 'wire override' }] });
    expect(await e.finalize(fa('both', 'f2'), T, 'ev-f2')).toMatchObject({ action: 'block', hits: [{ kind: 'keyword' }] });
    expect(await e.finalize(fa('lax', 'f3', 'payments'), T, 'ev-f3')).toMatchObject({ action: 'finalize', judged_by: 'rules', hits: [] });
  });
});
