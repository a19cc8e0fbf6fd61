/**
 * A tool call is recorded in its job as ran only when its final intervention let it run (spec-decisions D46):
 * a call held for approval (escalate) is neither a workflow step nor evidence while it waits, nor after a denial;
 * an approval granted later is recorded as ran by the approvals stage (recordApprovedCall, through the
 * ApprovalsProcessor's outcome branch).
 */
import { describe, expect, it } from 'vitest';
import type { InMessage } from '../../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../../src/adapters/kafka/topics.js';
import type { RedisApprovalStore } from '../../../../src/adapters/redis/approval-store.js';
import { ApprovalsProcessor } from '../../../../src/consumers/approvals.js';
import { approvalOutcomeJson } from '../../../../src/contracts/approvals.js';
import { answeredOutcome, timeoutOutcome, type ApprovalOutcome } from '../../../../src/engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../../../src/engine/approvals/policy.js';
import { compileBlueprintSet, parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { FinalizationGate, MemoryGateJobStore, recordApprovedCall } from '../../../../src/engine/gate/index.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';

const BP = `id: t/appr@1.0
version: "1.0.0"
description: approval + workflow
tools:
  - id: verify_identity
    requires_approval: true
    approval: { default_action: deny }
guardrails:
  - id: verify_then_access
    tier: 2
    workflow: { steps: [verify_identity, access_account], required: true }
`;
const AGENTS = `agents:
  - { id: a1, tenant: acme, tier: ACL-2, tools: [verify_identity, access_account], domains: [] }
`;
const T = Date.UTC(2026, 6, 1);
const KEY = { tenant: 'acme', agentId: 'a1', jobId: 'j1' };

function setup() {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 's.yaml', text: BP }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const { registry } = parseAgentRegistry(AGENTS, 'agents.yaml');
  const store = new MemoryGateJobStore();
  const engine = new StewardEngine({ blueprints: () => res.set!, registry: registry!, config, trustDebt: new MemoryTrustDebtStore(), engineVersion: 't', gate: new FinalizationGate({ jobStore: store }) });
  return { engine, store };
}
const call = (id: string, tool: string, args: Record<string, unknown> = {}): Trace => ({ trace_id: id, agent_id: 'a1', timestamp: new Date(T).toISOString(), hook: 'tool_call', job_id: 'j1', tool, args });
const answer = (id: string): Trace => ({ trace_id: id, agent_id: 'a1', timestamp: new Date(T).toISOString(), hook: 'final_answer', job_id: 'j1', draft_answer: 'Your account balance is 42.' });
const failed = (d: { rules: { id: string; passed: boolean }[] }) => d.rules.filter((r) => !r.passed).map((r) => r.id);

describe('a call held for approval did not run (D46)', () => {
  it('is recorded blocked: no workflow step, no evidence; the later step stays out of order and the answer fails tier 2', async () => {
    const { engine, store } = setup();
    const d1 = await engine.decide(call('c1', 'verify_identity'), T, 'ev-c1');
    expect(d1.intervention).toBe('escalate');
    expect(d1.approval).toBeDefined();
    const s = await store.get(KEY, T);
    expect(s?.tool_calls).toEqual([expect.objectContaining({ event_id: 'ev-c1', tool: 'verify_identity', blocked: true })]);
    expect(s?.evidence_count).toBe(0);
    expect(s?.steps_done).toBeUndefined();
    const d2 = await engine.decide(call('c2', 'access_account'), T + 1000, 'ev-c2');
    expect(d2.intervention).toBe('block');
    expect(failed(d2)).toContain('gate:workflow:verify_then_access');
    const o = await engine.finalize(answer('f1'), T + 2000, 'ev-f1');
    expect(o).toMatchObject({ verdict: 'FAIL', action: 'replan', judged_by: 'rules', hits: [{ kind: 'workflow', id: 'verify_then_access' }] });
  });

  it('an approval granted later records the call as ran (once, however often the outcome is recorded); then the workflow goes on', async () => {
    const { engine, store } = setup();
    const d1 = await engine.decide(call('c1', 'verify_identity', { path: 'ids/42.json' }), T, 'ev-c1');
    const granted = { ...answeredOutcome(d1.approval!, { decision: 'approve', approver: 'sup-1' }, 'kafka', T + 500) };
    await recordApprovedCall(store, granted);
    await recordApprovedCall(store, granted);
    const s = await store.get(KEY, T + 500);
    expect(s?.tool_calls.map((c) => [c.event_id, c.blocked])).toEqual([
      ['ev-c1', true],
      ['ev-c1#approved', false],
    ]);
    expect(s?.tool_calls[1]).toMatchObject({ tool: 'verify_identity', ts_ms: T + 500, files: ['ids/42.json'] });
    expect(s?.evidence_count).toBe(1);
    const d2 = await engine.decide(call('c2', 'access_account'), T + 1000, 'ev-c2');
    expect(d2.intervention).toBe('ok');
    // The next recorded call brings steps_done up to the kept calls.
    expect((await store.get(KEY, T + 1000))?.steps_done).toEqual([['verify_identity', 'access_account']]);
    expect(await engine.finalize(answer('f1'), T + 2000, 'ev-f1')).toMatchObject({ verdict: 'PASS', action: 'finalize', hits: [] });
  });

  it('a denial, a timeout with deny, or a call without a job records nothing', async () => {
    const { engine, store } = setup();
    const d1 = await engine.decide(call('c1', 'verify_identity'), T, 'ev-c1');
    const req = d1.approval!;
    expect(await recordApprovedCall(store, answeredOutcome(req, { decision: 'deny', approver: 'sup-1' }, 'http', T + 1))).toBeUndefined();
    expect(await recordApprovedCall(store, timeoutOutcome(req, T + 2))).toBeUndefined();
    expect(await recordApprovedCall(store, answeredOutcome({ ...req, job_id: null }, { decision: 'approve', approver: 'sup-1' }, 'http', T + 3))).toBeUndefined();
    expect((await store.get(KEY, T + 3))?.tool_calls.map((c) => c.blocked)).toEqual([true]);
  });

  it('the approvals stage records an approved outcome it reads back from acgp.approvals (the one Redis decided)', async () => {
    const { engine, store } = setup();
    const d1 = await engine.decide(call('c1', 'verify_identity'), T, 'ev-c1');
    const outcome: ApprovalOutcome = timeoutOutcome({ ...d1.approval!, default_action: 'approve' } as ApprovalRequest, T + 700);
    let confirmed = 0;
    const approvals = { status: async () => ({ status: outcome.status, outcome }), published: async () => void confirmed++ } as unknown as RedisApprovalStore;
    const topics = topicNames();
    const p = new ApprovalsProcessor({ store: approvals, topics, approvers: () => undefined, gateJobs: store });
    const m = { topic: topics.approvals, partition: 0, offset: '0', key: null, value: Buffer.from(approvalOutcomeJson(outcome)), headers: {}, timestampMs: T } satisfies InMessage;
    expect(await p.process(m)).toEqual([]);
    expect(await p.process(m)).toEqual([]);
    expect(confirmed).toBe(2);
    const s = await store.get(KEY, T + 700);
    expect(s?.tool_calls.map((c) => [c.event_id, c.blocked])).toEqual([
      ['ev-c1', true],
      ['ev-c1#approved', false],
    ]);
    expect((await engine.decide(call('c2', 'access_account'), T + 1000, 'ev-c2')).intervention).toBe('ok');
  });
});
