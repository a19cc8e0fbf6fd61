// The job state keeps a decided outcome in compact form (no events, no ledger draft): a redelivery must still
// get the first answer field for field, through a store that keeps JSON text as Redis does, from a second gate
// instance too; user_feedback still finds the ended job; states written with the whole outcome still answer.
import { describe, expect, it } from 'vitest';
import { FinalizationGate, MemoryGateJobStore, unpackStored } from '../../../../src/engine/gate/index.js';
import type { GateJobKey, GateJobState, GateJobStore } from '../../../../src/engine/gate/types.js';
import type { AgentInfo, Trace } from '../../../../src/engine/types.js';
import { compileOne, ScriptedLlm } from './helpers.js';

const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const bp = compileOne(
  'id: f@1.0\nversion: "1.0.0"\ndescription: f\nfinalization_gate:\n  prompt: B\n  model: judge-small\n  max_retries: 3\n  safety_patterns: [{ id: no-secret, pattern: "TOP-SECRET" }]\n',
);
const fa = (extra: Partial<Trace> = {}): Trace => ({
  trace_id: 'fa-1',
  agent_id: 'agent-1',
  timestamp: '2026-01-01T00:00:00Z',
  hook: 'final_answer',
  job_id: 'job-1',
  draft_answer: 'answer',
  user_id: 'u-7',
  session_id: 's-1',
  capability_profile_id: 'cp',
  intent_id: 'REPO_ORIENTATION',
  ...extra,
});
const T = Date.parse('2026-01-01T00:00:00Z');

/** Keeps each job as JSON text, as the Redis store does (what JSON drops is dropped here too). */
class JsonStore implements GateJobStore {
  readonly texts = new Map<string, string>();
  /** The agent index (D45) in memory: these stores are about the jobs' JSON. */
  private readonly agents = new MemoryGateJobStore();
  getAgent: GateJobStore['getAgent'] = (k, nowMs) => this.agents.getAgent(k, nowMs);
  updateAgent: GateJobStore['updateAgent'] = (k, nowMs, fn) => this.agents.updateAgent(k, nowMs, fn);
  private k = (key: GateJobKey) => JSON.stringify([key.tenant, key.agentId, key.jobId]);
  async get(key: GateJobKey): Promise<GateJobState | undefined> {
    const t = this.texts.get(this.k(key));
    return t === undefined ? undefined : (JSON.parse(t) as GateJobState);
  }
  async update(key: GateJobKey, _now: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState> {
    const next = fn(await this.get(key));
    this.texts.set(this.k(key), JSON.stringify(next));
    return next;
  }
}

const REPLAN = JSON.stringify({
  quality_score: 0.4,
  verdict: 'FAIL',
  reason_codes: ['MISSING_REQUIRED_ELEMENTS', 'NOT_A_CODE'],
  fix_mode: 'NEEDS_NEW_EVIDENCE',
  missing_requirements: ['the entry point'],
  evidence_issues: ['no file read'],
  next_actions: [{ type: 'tool', instruction: 'read main.ts', priority: 'high' }],
});
const CAVEATS = '{"quality_score":0.7,"verdict":"PASS_WITH_CAVEATS","reason_codes":["OVERLY_GENERIC"],"fix_mode":"REWRITE_ONLY","missing_requirements":["be specific"]}';

describe('stored outcome (compact job state)', () => {
  it('a redelivery gets the first answer byte for byte (JSON store, a second instance), for each kind of outcome', async () => {
    const store = new JsonStore();
    const llm = new ScriptedLlm();
    // replan (ledger draft, next actions, a dropped code), a rewrite at attempt 1, a judge that fails twice (degraded: on_judge_error), a tier-1 block
    llm.queue.push(REPLAN, CAVEATS, 'not json', 'still not json');
    const first = new FinalizationGate({ llm, jobStore: store });
    const cases: [Trace, string, number][] = [
      [fa(), 'e-1', T],
      [fa({ trace_id: 'fa-2', artifact_type: 'list' }), 'e-2', T + 5_000],
      [fa({ trace_id: 'fa-3', job_id: 'job-2' }), 'e-3', T + 6_000],
      [fa({ trace_id: 'fa-4', job_id: 'job-3', draft_answer: 'the TOP-SECRET plan' }), 'e-4', T + 7_000],
    ];
    const answers = [];
    for (const [t, e, now] of cases) answers.push(await first.finalize(t, agent, bp, now, e));
    expect(answers.map((a) => a.action)).toEqual(['replan', 'rewrite', 'block', 'block']);
    expect(answers[0]!.dropped_reason_codes).toEqual(['NOT_A_CODE']);
    expect(answers[2]!.judge_error).not.toBeNull();
    expect(answers[0]!.ledger).not.toBeNull();
    expect(answers[2]!.degraded).toBe(true);
    expect(answers[3]!.events.finalization_outcome).not.toBeNull();

    // The state holds neither event nor ledger draft.
    const text = [...store.texts.values()].join('\n');
    expect(text).not.toContain('final_alignment_judge_result');
    expect(text).not.toContain('REPLAN_TRIGGERED');

    const second = new FinalizationGate({ llm: new ScriptedLlm(), jobStore: store }); // no judge answer left: a judge call would throw
    for (let i = 0; i < cases.length; i++) {
      const [t, e, now] = cases[i]!;
      for (const gate of [first, second]) {
        const again = await gate.finalize(t, agent, bp, now, e);
        expect(again.redelivered).toBe(true);
        expect(JSON.stringify(again)).toBe(JSON.stringify({ ...answers[i]!, redelivered: true }));
        expect(JSON.stringify(again.events)).toBe(JSON.stringify(answers[i]!.events));
        expect(JSON.stringify(again.ledger)).toBe(JSON.stringify(answers[i]!.ledger));
      }
    }
    // Attempt counting unchanged: job-1 has two attempts, the next one is attempt 2.
    expect((await store.get({ tenant: 'acme', agentId: 'agent-1', jobId: 'job-1' }))!.attempt_count).toBe(2);
  });

  it('user_feedback re-emits the latest ended attempt’s outcome event as it was published', async () => {
    const llm = new ScriptedLlm();
    llm.queue.push(REPLAN, '{"quality_score":0.95,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}');
    const store = new JsonStore();
    const gate = new FinalizationGate({ llm, jobStore: store });
    const fb: Trace = { trace_id: 'u1', agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'user_feedback', job_id: 'job-1', feedback: 'up' };
    await gate.finalize(fa(), agent, bp, T, 'e-1');
    expect(await gate.userFeedback(fb, agent, T + 1)).toBeNull(); // a replan does not end the job
    const done = await gate.finalize(fa({ trace_id: 'fa-2', artifact_type: 'list' }), agent, bp, T + 60_000, 'e-2');
    const ev = await gate.userFeedback(fb, agent, T + 70_000);
    expect(ev).toEqual({ ...done.events.finalization_outcome, user_feedback: 'up' });
    expect(ev).toMatchObject({ num_retries: 1, time_to_finalize_ms: 60_000, final_verdict: 'pass' });
  });

  it('a state written with the whole outcome (before the compact form) still answers redeliveries and user_feedback', async () => {
    const llm = new ScriptedLlm();
    llm.queue.push('{"quality_score":0.95,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}');
    const made = await new FinalizationGate({ llm, jobStore: new MemoryGateJobStore() }).finalize(fa(), agent, bp, T, 'e-1');
    const legacy = { ...made, quality_score: 0.91 }; // marked: the answer must be this one, not a rebuilt one
    const store = new JsonStore();
    const key = { tenant: 'acme', agentId: 'agent-1', jobId: 'job-1' };
    await store.update(key, T, () => ({
      v: 1, job_id: 'job-1', tenant: 'acme', agent_id: 'agent-1', created_ms: T, updated_ms: T, attempt_count: 1, evidence_count: 0, rewrite_only: false, asked_user: false, tool_calls: [],
      attempts: [{ event_id: 'e-1', index: 0, ts_ms: T, abstraction_level: null, artifact_type: null, evidence: 0, clarification: null, action: 'finalize', verdict: 'PASS', outcome: legacy }],
    }));
    const gate = new FinalizationGate({ llm: new ScriptedLlm(), jobStore: store });
    expect(await gate.finalize(fa(), agent, bp, T, 'e-1')).toEqual({ ...legacy, redelivered: true });
    const fb: Trace = { trace_id: 'u1', agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'user_feedback', job_id: 'job-1', feedback: 'down' };
    expect(await gate.userFeedback(fb, agent, T + 1)).toEqual({ ...legacy.events.finalization_outcome, user_feedback: 'down' });
  });

  it('two instances deciding the same event: the one that recorded it first is the answer of both', async () => {
    const store = new JsonStore();
    const a = new ScriptedLlm();
    a.queue.push(REPLAN);
    const b = new ScriptedLlm();
    b.queue.push('{"quality_score":0.95,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}');
    // B read the job before A recorded its decision (a stale read), then judged differently.
    const stale: GateJobStore = { get: async () => undefined, update: (k, n, fn) => store.update(k, n, fn), getAgent: store.getAgent, updateAgent: store.updateAgent };
    const fromA = await new FinalizationGate({ llm: a, jobStore: store }).finalize(fa(), agent, bp, T, 'e-1');
    const fromB = await new FinalizationGate({ llm: b, jobStore: stale }).finalize(fa(), agent, bp, T, 'e-1');
    expect(fromA.action).toBe('replan');
    expect(fromB).toEqual({ ...fromA, redelivered: true });
    expect((await store.get({ tenant: 'acme', agentId: 'agent-1', jobId: 'job-1' }))!.attempt_count).toBe(1);
  });

  it('default-valued fields are left out of the state and put back on the way out; an attempt stored whole (before packing) answers the same', async () => {
    const llm = new ScriptedLlm();
    llm.queue.push('{"quality_score":0.95,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}');
    const store = new JsonStore();
    const first = await new FinalizationGate({ llm, jobStore: store }).finalize(fa({ session_id: undefined, user_id: undefined, capability_profile_id: undefined }), agent, bp, T, 'e-1');
    const key = { tenant: 'acme', agentId: 'agent-1', jobId: 'job-1' };
    const state = (await store.get(key))!;
    const o = state.attempts[0]!.o!;
    for (const f of ['reason_codes', 'missing_requirements', 'directive', 'degraded', 'skill_id', 'hits', 'dropped_reason_codes', 'evidence_issues', 'next_actions', 'anti_loop', 'judge_error']) expect(o).not.toHaveProperty(f);
    expect(Object.keys(o.facts).sort()).toEqual(['intent_id', 'latency_ms', 'model_id']);
    expect(unpackStored(o)).toEqual(unpackStored(unpackStored(o))); // unpacking a whole one changes nothing

    // The same attempt stored whole, as a build before packing wrote it: the redelivery is the same bytes.
    const whole = { ...state, attempts: [{ ...state.attempts[0]!, o: unpackStored(o) }] };
    expect(JSON.stringify(whole).length - JSON.stringify(state).length).toBeGreaterThan(250);
    const old = new JsonStore();
    await old.update(key, T, () => whole);
    for (const s of [store, old]) {
      const again = await new FinalizationGate({ llm: new ScriptedLlm(), jobStore: s }).finalize(fa({ session_id: undefined, user_id: undefined, capability_profile_id: undefined }), agent, bp, T, 'e-1');
      expect(JSON.stringify(again)).toBe(JSON.stringify({ ...first, redelivered: true }));
    }
  });
});
