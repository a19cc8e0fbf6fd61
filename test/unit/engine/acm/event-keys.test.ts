// #22 item 5 / spec-decisions D30: a run's ledger entries are keyed by event id (trace id + digest of the
// trace's bytes). A redelivered event (same bytes, same event id) maps to the entries already held; a reused
// trace id with other bytes is a second event whose entries must not be skipped as "already held".
import { describe, expect, it } from 'vitest';
import { governRunEvent, MemoryAcmRunStateStore, type AcmEnv, type BlueprintAnswer } from '../../../../src/engine/acm/index.js';
import { traceEventId } from '../../../../src/engine/event-id.js';
import { policyDecisionDraft } from '../../../../src/contracts/policy-decision.js';
import type { Trace } from '../../../../src/engine/types.js';
import { DSL } from './helpers.js';

const ok = (): Promise<BlueprintAnswer> => Promise.resolve({ blueprint: 'bp@1', intervention: 'ok', stage: 'rule' });
const base = { agent_id: 'ag', timestamp: '2026-01-01T00:00:00Z', run: { runId: 'r1' } };

async function setUp() {
  const store = new MemoryAcmRunStateStore();
  const env: AcmEnv = { dsl: DSL, planCache: new Map() };
  const o = { env, tenant: 'acme', nowMs: 1000 };
  const at = (line: string) => ({ ...o, eventId: traceEventId((JSON.parse(line) as Trace).trace_id, Buffer.from(line)) });
  const govern = async (line: string) => governRunEvent(store, JSON.parse(line) as Trace, at(line), ok);
  const ctx = JSON.stringify({ ...base, trace_id: 'c1', hook: 'context.packet', context: { id: 'c', sources: ['kb-snap://1'], facts: {} } });
  const plan = JSON.stringify({ ...base, trace_id: 'p1', hook: 'plan', goal: { id: 'G' }, selection: { method: 'policy', chosenPlanId: 'p' }, plans: [{ id: 'p', contextRef: 'c', tasks: [{ id: 'a' }, { id: 'b' }], edges: [{ from: 'a', to: 'b' }] }] });
  await govern(ctx);
  await govern(plan);
  return { govern, at };
}

const ids = (out: Awaited<ReturnType<typeof governRunEvent>>) => (out.kind === 'decided' ? out.drafts.map((d) => d.entry_id) : []);

describe('ledger entries keyed by event id (spec-decisions D30)', () => {
  it('a redelivered event yields the same entry ids; a reused trace id with other bytes yields new ones', async () => {
    const { govern, at } = await setUp();
    const pre = JSON.stringify({ ...base, trace_id: 't1', hook: 'task.pre', task: { id: 'a', input: { n: 1 } } });
    const first = await govern(pre);
    const eid = at(pre).eventId;
    expect(ids(first)).toEqual([`pd:${eid}`]);
    const again = await govern(pre);
    expect(again).toMatchObject({ kind: 'decided', replayed: true });
    expect(ids(again)).toEqual(ids(first));
    // The same trace id, other bytes: its own POLICY_DECISION, not hidden behind the first one's id.
    const reused = JSON.stringify({ ...base, trace_id: 't1', hook: 'task.post', task: { id: 'a', input: { n: 1 } }, output: { ok: true } });
    const second = await govern(reused);
    expect(second).toMatchObject({ kind: 'decided', replayed: false });
    expect(ids(second)[0]).toBe(`pd:${at(reused).eventId}`);
    expect(ids(second)[0]).not.toBe(ids(first)[0]);
    // A branch's BRANCH_TAKEN is keyed the same way.
    const branch = JSON.stringify({ ...base, trace_id: 't1', hook: 'branch', from: 'a', to: 'b' });
    expect(ids(await govern(branch))).toEqual([`pd:${at(branch).eventId}`, `bt:${at(branch).eventId}`]);
  });

  it("the sink's POLICY_DECISION of a plain decision is keyed by the decision's event id", () => {
    const d = { trace_id: 't', agent_id: 'a', blueprint: 'b', intervention: 'ok' as const, event_time_ms: 1 };
    expect(policyDecisionDraft({ ...d, event_id: 't#abc' }).entry_id).toBe('pd:t#abc');
    expect(policyDecisionDraft({ ...d, event_id: 't#def' }).entry_id).toBe('pd:t#def');
    expect(policyDecisionDraft(d).entry_id).toBe('pd:t');
  });
});
