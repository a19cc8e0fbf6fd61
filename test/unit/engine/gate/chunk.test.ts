// decideChunk (src/engine/gate/chunk.ts): a stage's chunk decided in job-state rounds must answer exactly as the
// answers decided one at a time would — answers of one job in order (each sees the state the one before it
// recorded), redeliveries, user_feedback after the job ended in the same chunk — with all reads issued before any
// write in each wave, and a failure leaving its job's later items undone rather than deciding them out of order.
import { describe, expect, it } from 'vitest';
import { decideChunk, FinalizationGate, MemoryGateJobStore, type GateChunkItem, type GateChunkResult } from '../../../../src/engine/gate/index.js';
import type { GateJobKey, GateJobState, GateJobStore } from '../../../../src/engine/gate/types.js';
import type { AgentInfo, LlmClient, Trace } from '../../../../src/engine/types.js';
import { compileOne } from './helpers.js';

const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const bp = compileOne('id: c@1.0\nversion: "1.0.0"\ndescription: c\nfinalization_gate:\n  prompt: B\n  max_retries: 2\n');
const T = Date.parse('2026-01-01T00:00:00Z');

const PASS = '{"quality_score":0.95,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}';
const REPLAN = '{"quality_score":0.4,"verdict":"FAIL","reason_codes":["MISSING_REQUIRED_ELEMENTS"],"fix_mode":"NEEDS_NEW_EVIDENCE","missing_requirements":["the entry point"]}';
const REWRITE = '{"quality_score":0.5,"verdict":"FAIL","reason_codes":["OVERLY_GENERIC"],"fix_mode":"REWRITE_ONLY","missing_requirements":["be specific"]}';
/** Answers by the draft (concurrent calls must not depend on call order). */
const llm: LlmClient = {
  complete: async (req) => ({ text: req.prompt.includes('DRAFT-REPLAN') ? REPLAN : req.prompt.includes('DRAFT-REWRITE') ? REWRITE : PASS, model: 'judge', latencyMs: 1 }),
};

/** Keeps each job as JSON text, as the Redis store does; logs the operations in the order they were issued. */
class JsonStore implements GateJobStore {
  readonly texts = new Map<string, string>();
  /** The agent index (D45) in memory: these stores are about the jobs' JSON. */
  private readonly agents = new MemoryGateJobStore();
  getAgent: GateJobStore['getAgent'] = (k, nowMs) => this.agents.getAgent(k, nowMs);
  updateAgent: GateJobStore['updateAgent'] = (k, nowMs, fn) => this.agents.updateAgent(k, nowMs, fn);
  readonly log: string[] = [];
  failUpdate = new Set<string>();
  private k = (key: GateJobKey) => JSON.stringify([key.tenant, key.agentId, key.jobId]);
  async get(key: GateJobKey): Promise<GateJobState | undefined> {
    this.log.push(`get ${key.jobId}`);
    const t = this.texts.get(this.k(key));
    return t === undefined ? undefined : (JSON.parse(t) as GateJobState);
  }
  async update(key: GateJobKey, _now: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState> {
    this.log.push(`update ${key.jobId}`);
    if (this.failUpdate.has(key.jobId)) throw Object.assign(new Error('redis down'), { retryable: true });
    const t = this.texts.get(this.k(key));
    const next = fn(t === undefined ? undefined : (JSON.parse(t) as GateJobState));
    this.texts.set(this.k(key), JSON.stringify(next));
    return next;
  }
}

const fa = (id: string, job: string, draft: string, extra: Partial<Trace> = {}): Trace => ({ trace_id: id, agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: job, intent_id: 'REPO_ORIENTATION', draft_answer: draft, ...extra });
const fb = (id: string, job: string): Trace => ({ trace_id: id, agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'user_feedback', job_id: job, feedback: 'up' });
const item = (t: Trace, eventId: string, nowMs: number): GateChunkItem =>
  t.hook === 'user_feedback' ? { hook: 'user_feedback', trace: t, agent, nowMs } : { hook: 'final_answer', trace: t, agent, blueprint: bp, nowMs, eventId };

/** The same items one at a time through finalize()/userFeedback() (what the stage did before chunks). */
async function oneByOne(items: GateChunkItem[]): Promise<unknown[]> {
  const gate = new FinalizationGate({ llm, jobStore: new JsonStore() });
  const out: unknown[] = [];
  for (const it of items) {
    try {
      if (it.hook === 'final_answer') out.push({ outcome: await gate.finalize(it.trace, it.agent, it.blueprint, it.nowMs, it.eventId) });
      else if (it.hook === 'user_feedback') out.push({ feedback: await gate.userFeedback(it.trace, it.agent, it.nowMs) });
    } catch (e) {
      out.push({ error: (e as { code?: string }).code });
    }
  }
  return out;
}
const comparable = (r: GateChunkResult) => ('undone' in r ? { error: (r.error as { code?: string } | undefined)?.code } : r);

describe('decideChunk: a chunk in job-state rounds', () => {
  it('answers as one answer at a time would: a job’s answers in order, a redelivery in the chunk, feedback after the job ended, a malformed answer', async () => {
    const items = [
      item(fa('a1', 'job-a', 'DRAFT-REPLAN'), 'e-a1', T),
      item(fa('b1', 'job-b', 'fine'), 'e-b1', T + 1),
      item(fa('a2', 'job-a', 'DRAFT-REWRITE', { artifact_type: 'list' }), 'e-a2', T + 2), // sees a1: attempt 1
      item(fb('f-b', 'job-b'), 'f-b', T + 3), // job-b ended in this chunk
      item(fa('c1', 'job-c', ''), 'e-c1', T + 4), // no draft: STEWARD_GATE_INPUT
      item(fa('a3', 'job-a', 'DRAFT-REWRITE', { artifact_type: 'list' }), 'e-a3', T + 5), // no difference from a2: limitations
      item(fa('a1', 'job-a', 'DRAFT-REPLAN'), 'e-a1', T + 6), // a redelivery of a1
      item(fa('c2', 'job-c', 'fine'), 'e-c2', T + 7), // job-c goes on after the malformed one
    ];
    const store = new JsonStore();
    const got = await decideChunk(new FinalizationGate({ llm, jobStore: store }), items, { concurrency: 4 });
    const want = await oneByOne(items);
    // latency_ms is the judge call's measured time: the one field that may differ between two runs
    const text = (x: unknown) => JSON.stringify(x, (k, v: unknown) => (k === 'latency_ms' ? 0 : v));
    expect(text(got.map(comparable))).toBe(text(want));

    const outcome = (i: number) => (got[i] as { outcome: { action: string; attempt_index: number; redelivered: boolean; anti_loop: string | null } }).outcome;
    expect([0, 2, 5].map((i) => [outcome(i).action, outcome(i).attempt_index])).toEqual([['replan', 0], ['replan', 1], ['finalize_with_limitations', 2]]);
    expect(outcome(5).anti_loop).toBe('max_retries');
    expect(outcome(6)).toMatchObject({ action: 'replan', attempt_index: 0, redelivered: true });
    expect(got[3]).toMatchObject({ feedback: { event: 'finalization_outcome', user_feedback: 'up' } });
    expect(got[4]).toMatchObject({ undone: true, error: { code: 'STEWARD_GATE_INPUT' } });
    expect(outcome(7)).toMatchObject({ action: 'finalize', attempt_index: 0 });

    // Waves: every read of a wave before any write of it; job-a's three answers and its redelivery take four waves.
    const waves = store.log.join(' ').split(/(?<=update \S+) (?=get)/);
    expect(waves[0]).toBe('get job-a get job-b get job-c update job-a update job-b update job-c');
    expect(waves.slice(1)).toEqual(['get job-a get job-b update job-a', 'get job-a update job-a', 'get job-a']);
  });

  it('a failed write leaves that answer and its job’s later ones undone (nothing decided out of order); other jobs are answered', async () => {
    const store = new JsonStore();
    store.failUpdate.add('job-x');
    const items = [item(fa('x1', 'job-x', 'fine'), 'e-x1', T), item(fa('y1', 'job-y', 'fine'), 'e-y1', T), item(fa('x2', 'job-x', 'fine'), 'e-x2', T + 1)];
    const failed: GateChunkItem = { hook: 'failed', trace: fa('z1', 'job-z', 'fine'), agent, error: new Error('trust debt unavailable') };
    const got = await decideChunk(new FinalizationGate({ llm, jobStore: store }), [...items, failed, item(fa('z2', 'job-z', 'fine'), 'e-z2', T)]);
    expect(got[0]).toMatchObject({ undone: true, error: { message: 'redis down' } });
    expect(got[1]).toMatchObject({ outcome: { action: 'finalize' } });
    expect(got[2]).toEqual({ undone: true });
    expect(got[3]).toMatchObject({ undone: true, error: { message: 'trust debt unavailable' } });
    expect(got[4]).toEqual({ undone: true });
    expect(store.log).not.toContain('get job-z');
  });
});

describe('two gate instances racing on one event (a rebalance hands a partition over mid-chunk)', () => {
  // Both decide alike (tier 1 and rules always do; a judge answer may): the stored outcomes are then the same bytes,
  // so only the write can tell which instance recorded the event. The other one answers as a redelivery, so the
  // stages count the answer in the metrics once (audit #20 round 4, finding 6).
  const SECRET = 'key ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789'; // tier 1 blocks it: no judge call
  type Answer = { action: string; redelivered: boolean };
  const viaFinalize = (g: FinalizationGate, t: Trace) => g.finalize(t, agent, bp, T, `e-${t.trace_id}`);
  const viaChunk = async (g: FinalizationGate, t: Trace) => ((await decideChunk(g, [item(t, `e-${t.trace_id}`, T)]))[0] as { outcome: Answer }).outcome;
  const race = async (draft: string, decide: (gate: FinalizationGate, t: Trace) => Promise<Answer>) => {
    const store = new JsonStore();
    const [a, b] = [new FinalizationGate({ llm, jobStore: store }), new FinalizationGate({ llm, jobStore: store })];
    const t = fa('r1', 'job-r', draft);
    const outs = await Promise.all([decide(a, t), decide(b, t)]);
    expect(store.log.filter((l) => l.startsWith('update'))).toHaveLength(2); // both decided and wrote: a real race
    expect((JSON.parse([...store.texts.values()][0]!) as GateJobState).attempts).toHaveLength(1);
    return outs.map((o) => [o.action, o.redelivered]);
  };

  it('finalize(), a tier-1 block: the loser answers as a redelivery', async () => {
    expect(await race(SECRET, viaFinalize)).toEqual([['block', false], ['block', true]]);
  });

  it('decideChunk, a tier-1 block and a judged PASS: the same', async () => {
    expect(await race(SECRET, viaChunk)).toEqual([['block', false], ['block', true]]);
    expect(await race('fine', viaChunk)).toEqual([['finalize', false], ['finalize', true]]);
  });

  it('finalize(), a judged PASS: the same', async () => {
    expect(await race('fine', viaFinalize)).toEqual([['finalize', false], ['finalize', true]]);
  });
});
