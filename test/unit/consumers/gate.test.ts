// The gate stage's processor over the real engine (StewardEngine with a FinalizationGate over an in-memory
// job store; no LLM: tiers 1–2 decide): what it answers and publishes for a final answer, a redelivery,
// a user_feedback and malformed input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicClient, OpenAiCompatibleClient } from '../../../src/adapters/llm/index.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { GateProcessor } from '../../../src/consumers/gate.js';
import { finalizeJson } from '../../../src/consumers/finalize-message.js';
import { compileBlueprintSet, createAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { FinalizationGate } from '../../../src/engine/gate/finalization-gate.js';
import { MemoryGateJobStore } from '../../../src/engine/gate/job-state.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../src/engine/types.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import type { LlmClient } from '../../../src/engine/types.js';
import { startLlmServer, type LlmStandIn } from '../../support/llm-server.js';

const topics = topicNames('acgp');
const BP = `id: t/gated@1.0
version: "1.0.0"
description: gated
scope: { agent_tier: [ACL-2] }
guardrails:
  - { id: read_first, tier: 2, workflow: { steps: [read_file] }, when: { intent_id: CHANGE_IMPLEMENTATION } }
`;
const config = defaultEngineConfig();
const set = compileBlueprintSet([{ file: 'g.yaml', text: BP }], { config }).set!;

function setup(extra: { chunkSlice?: number } = {}, llm?: LlmClient) {
  const engine = new StewardEngine({
    blueprints: () => set,
    registry: createAgentRegistry([{ id: 'a', tenant: 'acme', tier: 'ACL-2', tools: ['read_file'], domains: [], registered: true }]),
    config,
    trustDebt: new MemoryTrustDebtStore(),
    engineVersion: 't',
    gate: new FinalizationGate({ llm, jobStore: new MemoryGateJobStore() }),
  });
  const metrics = new StewardMetrics();
  const proc = new GateProcessor({ engine, topics, metrics, replies: { topic: topics.replies, partitions: 4 }, maxMessageBytes: 1_000_000, nowMs: () => 99, ...extra });
  return { proc, metrics };
}

const T = Date.UTC(2026, 6, 1);
const answer = (id: string, extra: Partial<Trace> = {}): Trace => ({ trace_id: id, agent_id: 'a', timestamp: new Date(T).toISOString(), hook: 'final_answer', job_id: 'j1', intent_id: 'CHANGE_IMPLEMENTATION', draft_answer: 'done', ...extra });
const msg = (t: Trace, eventId: string, reply = true): InMessage => ({
  topic: topics.finalize,
  partition: 0,
  offset: '1',
  key: Buffer.from(t.agent_id),
  value: Buffer.from(finalizeJson(JSON.stringify(t), T, eventId, reply ? { topic: topics.replies, partition: 2, correlation_id: 'c-1' } : undefined)),
  headers: {},
  timestampMs: T,
});
const json = (o: { message: { value: unknown } }) => JSON.parse(String(o.message.value));

describe('gate stage processor', () => {
  it('answers the client (kind gate), publishes the judge result with its debt, the outcome when the job ends, and repair directives to the ledger', async () => {
    const { proc, metrics } = setup();
    const outs = await proc.process(msg(answer('fa-1'), 'fa-1#x'));
    expect(outs.map((o) => o.topic)).toEqual([topics.replies, topics.gate, topics.ledger]);
    expect(outs[0]!.message.partition).toBe(2);
    expect(outs[0]!.message.headers).toMatchObject({ 'x-steward-reply-kind': 'gate', 'x-steward-correlation-id': 'c-1' });
    expect(json(outs[0]!)).toMatchObject({ trace_id: 'fa-1', job_id: 'j1', verdict: 'FAIL', action: 'replan', judged_by: 'rules', intervention: 'block', approved: false, decided_at_ms: 99, event_time_ms: T });
    // blueprint: the trust-debt stage applies the debt under its settings (spec-decisions D50)
    expect(json(outs[1]!)).toMatchObject({ event: 'final_alignment_judge_result', attempt_index: 0, trust_debt: { no_debt: true }, blueprint: 't/gated@1.0' });
    expect(json(outs[2]!)).toMatchObject({ type: 'REPLAN_TRIGGERED', agent_id: 'a' });
    expect((await metrics.gateJudgeResults.get()).values.reduce((a, v) => a + v.value, 0)).toBe(1);

    // A redelivery of the same event: the same answer, not a second attempt, not counted again.
    const again = await proc.process(msg(answer('fa-1'), 'fa-1#x'));
    expect(json(again[0]!)).toMatchObject({ attempt_index: 0, action: 'replan' });
    expect((await metrics.gateJudgeResults.get()).values.reduce((a, v) => a + v.value, 0)).toBe(1);
  });

  it('a job that ends twice (blocked, then a corrected draft passing) counts once in the outcome metrics, as v_gate_jobs (D45)', async () => {
    const { proc, metrics } = setup();
    const net = async () => {
      const sum = async (c: { get(): Promise<{ values: { value: number; labels: Record<string, unknown>; metricName?: string }[] }> }, name?: string) =>
        (await c.get()).values.filter((v) => !name || v.metricName === name).reduce((a, v) => a + v.value, 0);
      return {
        jobs: (await sum(metrics.gateOutcomes)) - (await sum(metrics.gateOutcomesSuperseded)),
        retries: (await sum(metrics.gateRetries, 'steward_gate_retries_sum')) - (await sum(metrics.gateRetriesSuperseded, 'steward_gate_retries_superseded_sum')),
        endings: (await sum(metrics.gateRetries, 'steward_gate_retries_count')) - (await sum(metrics.gateRetriesSuperseded, 'steward_gate_retries_superseded_count')),
      };
    };
    // attempt 0: a tier-1 hit ends the job blocked (a credential in the draft)
    const first = await proc.process(msg(answer('fa-1', { intent_id: 'SYSTEM_CONTROL_FLOW', draft_answer: 'token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789' }), 'fa-1#x', false));
    expect(first.map((o) => json(o))).toContainEqual(expect.objectContaining({ event: 'finalization_outcome', action: 'block', num_retries: 0 }));
    expect(await net()).toEqual({ jobs: 1, retries: 0, endings: 1 });
    // attempt 1: the corrected draft passes; the job's block ending is superseded
    await proc.process(msg(answer('fa-2', { intent_id: 'SYSTEM_CONTROL_FLOW', draft_answer: 'fixed' }), 'fa-2#x', false));
    expect(await net()).toEqual({ jobs: 1, retries: 1, endings: 1 });
    const superseded = (await metrics.gateOutcomesSuperseded.get()).values.filter((v) => v.value > 0);
    expect(superseded).toEqual([expect.objectContaining({ labels: { intent: 'SYSTEM_CONTROL_FLOW', final_verdict: 'fail', action: 'block', retried: 'false' }, value: 1 })]);
    // a redelivery of the second answer changes nothing
    await proc.process(msg(answer('fa-2', { intent_id: 'SYSTEM_CONTROL_FLOW', draft_answer: 'fixed' }), 'fa-2#x', false));
    expect(await net()).toEqual({ jobs: 1, retries: 1, endings: 1 });
  });

  it('a passing answer ends the job (outcome event); user_feedback re-publishes it with the feedback', async () => {
    const { proc } = setup();
    const outs = await proc.process(msg(answer('fa-2', { intent_id: 'SYSTEM_CONTROL_FLOW' }), 'fa-2#x', false));
    expect(outs.map((o) => o.topic)).toEqual([topics.gate, topics.gate]);
    expect(json(outs[1]!)).toMatchObject({ event: 'finalization_outcome', final_verdict: 'pass', user_feedback: null });
    const fb = await proc.process(msg({ trace_id: 'fb-1', agent_id: 'a', timestamp: new Date(T).toISOString(), hook: 'user_feedback', job_id: 'j1', feedback: 'down' }, 'fb-1#x', false));
    expect(fb).toHaveLength(1);
    expect(json(fb[0]!)).toMatchObject({ event: 'finalization_outcome', event_id: json(outs[1]!).event_id, user_feedback: 'down' });
    // feedback for a job that never ended changes nothing
    expect(await proc.process(msg({ trace_id: 'fb-2', agent_id: 'a', timestamp: new Date(T).toISOString(), hook: 'user_feedback', job_id: 'nope', feedback: 'up' }, 'fb-2#x', false))).toEqual([]);
  });

  it('malformed finalize messages and final answers without a draft are dead-lettered (non-retryable)', async () => {
    const { proc } = setup();
    const bad = (value: string): InMessage => ({ ...msg(answer('x'), 'x'), value: Buffer.from(value) });
    await expect(proc.process(bad('{'))).rejects.toMatchObject({ code: 'STEWARD_TRACE_JSON' });
    await expect(proc.process(bad('{"trace":{}}'))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
    await expect(proc.process(msg({ ...answer('fa-3'), hook: 'tool_call' }, 'fa-3#x'))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
    await expect(proc.process(msg(answer('fa-4', { draft_answer: '' }), 'fa-4#x'))).rejects.toMatchObject({ code: 'STEWARD_GATE_INPUT', retryable: false });
  });

  it('processChunk answers like process(), in slices; an unfinished input leaves its job’s later inputs of later slices to process()', async () => {
    const chunk = (slice: number) => {
      const { proc } = setup({ chunkSlice: slice });
      const ms = [msg(answer('fa-1', { draft_answer: '' }), 'fa-1#x'), msg(answer('fa-2', { job_id: 'j2' }), 'fa-2#x'), msg(answer('fa-3'), 'fa-3#x'), { ...msg(answer('fa-4'), 'fa-4#x'), value: Buffer.from('{') }];
      return { proc, ms, outs: proc.processChunk(ms) };
    };
    // One slice: the malformed answer (no draft) is left to process() (which dead-letters it); it changes no state,
    // so its job's next answer is decided here.
    const one = chunk(10);
    const outs = await one.outs;
    expect(Array.from(outs, (o) => o !== undefined)).toEqual([false, true, true, false]);
    const fresh = setup();
    expect(json(outs[2]![0]!)).toEqual(json((await fresh.proc.process(msg(answer('fa-3'), 'fa-3#x')))[0]!));
    // Slices of two: fa-3 (job j1) comes after j1's unfinished fa-1 in an earlier slice: left to process() too.
    const two = await chunk(2).outs;
    expect(Array.from(two, (o) => o !== undefined)).toEqual([false, true, false, false]);
  });

  it('processChunk stops between slices when told to (a rebalance or shutdown): the rest is left undefined', async () => {
    const { proc } = setup({ chunkSlice: 1 });
    const ms = ['fa-1', 'fa-2', 'fa-3'].map((id, i) => msg(answer(id, { job_id: `j${i}` }), `${id}#x`));
    let asked = 0;
    const outs = await proc.processChunk(ms, () => ++asked > 1); // false before the first slice, true before the second
    expect(Array.from(outs, (o) => o !== undefined)).toEqual([true, false, false]);
    expect(asked).toBe(2);
  });

  it('processChunk with sendNow: each reply goes there when its answer is recorded, the events stay in the input’s outputs', async () => {
    const { proc } = setup();
    const ms = [msg(answer('fa-1'), 'fa-1#x'), msg(answer('fa-2', { job_id: 'j2' }), 'fa-2#x', false)];
    const early: [number, string[]][] = [];
    const outs = await proc.processChunk(ms, undefined, (at, o) => early.push([at, o.map((x) => x.topic)]));
    expect(early).toEqual([[0, [topics.replies]]]); // fa-2 asked for no reply
    // here a replan: the judge result and the REPLAN_TRIGGERED draft, no reply
    expect(outs.map((o) => o!.map((x) => x.topic))).toEqual([[topics.gate, topics.ledger], [topics.gate, topics.ledger]]);
    // without sendNow the reply is the input's first output, as process() makes it
    const plain = await setup().proc.processChunk(ms);
    expect(plain[0]!.map((x) => x.topic)).toEqual([topics.replies, topics.gate, topics.ledger]);
  });
});

describe('gate stage processor with a judge over HTTP: token cost (spec-decisions D41)', () => {
  let server: LlmStandIn;
  const JUDGED = JSON.stringify({ quality_score: 0.9, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });
  beforeAll(async () => {
    server = await startLlmServer({ kind: 'content', content: JUDGED });
  });
  afterAll(() => server.close());

  it.each([
    ['openai', (url: string): LlmClient => new OpenAiCompatibleClient({ baseUrl: url, model: 'judge-o' })],
    ['anthropic', (url: string): LlmClient => new AnthropicClient({ baseUrl: url, model: 'judge-a' })],
  ])("the %s judge's reported usage is the judge result's token_cost and steward_gate_token_cost_total", async (_p, make) => {
    const { proc, metrics } = setup({}, make(server.url));
    server.script({ kind: 'content', content: JUDGED, usage: { input: 1500, output: 42 } }, { kind: 'content', content: JUDGED, usage: { input: 900, output: 58 } });
    const first = await proc.process(msg(answer('fa-t1', { intent_id: 'SYSTEM_CONTROL_FLOW' }), 'fa-t1#x', false));
    expect(json(first[0]!)).toMatchObject({ event: 'final_alignment_judge_result', judged_by: 'llm', verdict: 'PASS', token_cost: 1542 });
    await proc.process(msg(answer('fa-t2', { intent_id: 'SYSTEM_CONTROL_FLOW', job_id: 'j2' }), 'fa-t2#x', false));
    const cost = (await metrics.gateTokenCost.get()).values;
    expect(cost).toEqual([expect.objectContaining({ labels: { intent: 'SYSTEM_CONTROL_FLOW' }, value: 2500 })]);
    // A redelivery answers from the stored outcome: the same token_cost, not counted again.
    const again = await proc.process(msg(answer('fa-t1', { intent_id: 'SYSTEM_CONTROL_FLOW' }), 'fa-t1#x', false));
    expect(json(again[0]!)).toMatchObject({ token_cost: 1542 });
    expect((await metrics.gateTokenCost.get()).values[0]!.value).toBe(2500);
  });
});

describe("the gate reply's approved means deliver (spec-decisions D49, issue #20 audit r4 finding 4)", () => {
  let server: LlmStandIn;
  beforeAll(async () => {
    server = await startLlmServer({ kind: 'content', content: '{}' });
  });
  afterAll(() => server.close());
  const judged = (verdict: string, score: number) => JSON.stringify({ quality_score: score, verdict, reason_codes: verdict === 'PASS' ? [] : ['MISSING_REQUIRED_ELEMENTS'], fix_mode: 'REWRITE_ONLY', missing_requirements: verdict === 'PASS' ? [] : ['name the file'] });

  it('PASS_WITH_CAVEATS orders a repair (intervention nudge, action rewrite): approved false; a PASS (finalize) is approved', async () => {
    const { proc } = setup({}, new OpenAiCompatibleClient({ baseUrl: server.url, model: 'judge-o' }));
    server.script({ kind: 'content', content: judged('PASS_WITH_CAVEATS', 0.72) });
    const caveats = await proc.process(msg(answer('fa-c1', { intent_id: 'SYSTEM_CONTROL_FLOW', job_id: 'jc' }), 'fa-c1#x'));
    const r0 = json(caveats[0]!);
    expect(r0).toMatchObject({ verdict: 'PASS_WITH_CAVEATS', intervention: 'nudge', action: 'rewrite', approved: false });
    expect(r0.directive).toEqual(expect.stringContaining('You must repair the final answer'));
    server.script({ kind: 'content', content: judged('PASS', 0.9) });
    const pass = await proc.process(msg(answer('fa-c2', { intent_id: 'SYSTEM_CONTROL_FLOW', job_id: 'jc' }), 'fa-c2#x'));
    expect(json(pass[0]!)).toMatchObject({ verdict: 'PASS', action: 'finalize', approved: true });
  });
});
