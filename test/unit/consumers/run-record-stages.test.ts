// The stage halves of an ACM run event's replay records (contracts C12, docs/acm.md "In the stream"): the tripwire
// stage publishes a pending record (no run-chain copies of its drafts, the input not repeated) for a decided event of a run, and hands a
// halted one to the scorer too; the scorer publishes its answer on acgp.ledger (same key), and for a halted event
// only the answer — no verdict. Without run governance nothing changes.
import { describe, expect, it } from 'vitest';
import { TripwireProcessor } from '../../../src/consumers/tripwire.js';
import { ScorerProcessor } from '../../../src/consumers/scorer.js';
import { scoringJson } from '../../../src/consumers/scoring-message.js';
import { TraceDecoder } from '../../../src/adapters/kafka/serde.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { acmPolicyDecisionDraft } from '../../../src/engine/ledger/acm-entries.js';
import type { DecisionRecord } from '../../../src/engine/steward-engine.js';
import type { StageOutput } from '../../../src/consumers/stage-types.js';
import { blockedRecord, scoreRecord } from './fixtures.js';

const topics = topicNames('p');
const runTrace = { trace_id: 'tr-1', agent_id: 'a1', timestamp: '2026-01-01T00:00:00Z', hook: 'task.pre', task: { id: 'k1', capability: 'c', input: { n: 1 } }, run: { runId: 'run-9' } };
const line = JSON.stringify(runTrace);
const pd = acmPolicyDecisionDraft({ trace_id: 'tr-1', agent_id: 'a1', tenant: 'acme', run_id: 'run-9', hook: 'task.pre', ts_ms: 1, blueprint: 'b', intervention: 'ok', approved: true });
const ps = { ...pd, entry_id: 'ps:tr-1', type: 'PLAN_SELECTED' as const };

function decided(halted: boolean): DecisionRecord {
  return blockedRecord({ intervention: halted ? 'block' : 'ok', halted, stage: halted ? 'tripwire' : 'none', rules: [], reasons: [], acm: { run_id: 'run-9', violations: [], drafts: [pd, ps], record: { seq: 4, contexts: [] }, reads: [{ op: 'get', ns: 'acme:a1', key: 'x', value: 2 }] } });
}

const tripwire = (halted: boolean) =>
  new TripwireProcessor({ engine: { decide: async () => decided(halted) }, decoder: new TraceDecoder({ maxBytes: 100_000 }), topics, metrics: new StewardMetrics(), replies: { topic: topics.replies, partitions: 4 }, maxEventTimeSkewMs: null, nowMs: () => 42 });
const traceMsg: InMessage = { topic: topics.traces, partition: 0, offset: '5', key: Buffer.from('a1'), value: Buffer.from(line), headers: {}, timestampMs: 0 };
const ledgerOf = (outs: StageOutput[]) => outs.filter((o) => o.topic === topics.ledger).map((o) => JSON.parse(String(o.message.value)) as Record<string, any>);

describe('tripwire stage: a run event’s pending record', () => {
  it('publishes the drafts once (agent chain) and the pending record: trace as received, request without scorer answers, reads, seq', async () => {
    const outs = await tripwire(false).process(traceMsg);
    const ledger = ledgerOf(outs);
    expect(ledger.map((v) => v.run_record ?? v.entry_id)).toEqual([pd.entry_id, 'ps:tr-1', 'pending']);
    expect(ledger.some((v) => v.chain === 'run')).toBe(false);
    const p = ledger[2]!;
    expect(p).toMatchObject({ tenant: 'acme', run_id: 'run-9', agent_id: 'a1', trace_id: 'tr-1', seq: 4, line, drafts: [ps], task_id: 'k1' });
    expect(p.request).toMatchObject({ seq: 4, trace_line: 4, hook: 'task.pre', reads: [{ op: 'get', key: 'x', value: 2 }] });
    // The §14.1 input and the scorers' answers are not repeated: the join takes the input from the line.
    expect(p.request.input).toBeUndefined();
    expect(p.request.scorer_answers).toBeUndefined();
    expect(outs.filter((o) => o.topic === topics.ledger).every((o) => String(o.message.key) === 'a1')).toBe(true);
  });

  it('a halted run event still goes to the scorer (for its answer); a halted event of no run does not', async () => {
    expect((await tripwire(true).process(traceMsg)).some((o) => o.topic === topics.scoring)).toBe(true);
    const plain = new TripwireProcessor({ engine: { decide: async () => blockedRecord({ halted: true, stage: 'tripwire' }) }, decoder: new TraceDecoder({ maxBytes: 100_000 }), topics, metrics: new StewardMetrics(), replies: { topic: topics.replies, partitions: 4 }, maxEventTimeSkewMs: null });
    const outs = await plain.process(traceMsg);
    expect(outs.some((o) => o.topic === topics.scoring)).toBe(false);
    expect(ledgerOf(outs)).toEqual([]);
  });
});

describe('scorer stage: a run event’s answer', () => {
  const scoring = (halted: boolean): InMessage => ({ topic: topics.scoring, partition: 0, offset: '7', key: Buffer.from('a1'), value: Buffer.from(scoringJson(line, 1767225600000, { ...decided(halted), acm: undefined, eventId: 'tr-1#e' }, undefined)), headers: {}, timestampMs: 0 });
  const scorer = (runRecords: boolean) => new ScorerProcessor({ engine: { score: async () => scoreRecord({ intervention: 'flag', stage: 'ctq', ctq: 0.7, metrics: [{ name: 'm', weight: 1, scorer: 's', score: 0.7, confidence: 1, status: 'ok' }] }) }, topics, metrics: new StewardMetrics(), runRecords });

  it('a scored event of a run: the verdict and, on acgp.ledger under the same key, the answer', async () => {
    const outs = await scorer(true).process(scoring(false));
    expect(outs.map((o) => o.topic)).toEqual([topics.verdicts, topics.ledger]);
    expect(ledgerOf(outs)[0]).toMatchObject({ run_record: 'answer', tenant: 'acme', run_id: 'run-9', agent_id: 'a1', trace_id: 'tr-1', event_id: 'tr-1#e', intervention: 'flag', stage: 'ctq', ctq: 0.7, metrics: [{ name: 'm', score: 0.7 }] });
    expect(outs[1]!.message.key).toBe('a1');
  });

  it('a halted event of a run: the answer only, no verdict; without run governance no answer and a halted record yields nothing', async () => {
    expect((await scorer(true).process(scoring(true))).map((o) => o.topic)).toEqual([topics.ledger]);
    expect((await scorer(false).process(scoring(false))).map((o) => o.topic)).toEqual([topics.verdicts]);
    expect(await scorer(false).process(scoring(true))).toEqual([]);
  });
});
