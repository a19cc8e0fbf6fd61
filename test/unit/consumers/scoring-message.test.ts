import { describe, expect, it } from 'vitest';
import { compactRecord, parseScoring, scoringJson } from '../../../src/consumers/scoring-message.js';
import { decisionInputOf, decisionMessage } from '../../../src/contracts/engine-records.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import type { Trace } from '../../../src/engine/types.js';
import { blockedRecord, shellTrace } from './fixtures.js';

const trace: Trace = { ...shellTrace, args: { cmd: 'ls' } };
const record = blockedRecord({
  tripwires: [{ id: 'tw', fired: false, latencyMs: 0.2 }, { id: 'tw2', fired: true, decision: 'flag', reason: 'r', severity: 'minor', error: { code: 'X', message: 'y' }, latencyMs: 3.1 }],
  severity: 'minor',
  blueprintVersion: '1.0.0',
  trustDebt: { debt: 0.1, level: 'normal' },
  fullScoring: false,
  nowMs: 1767225600000,
});
const inMsg = (value: string): InMessage => ({ topic: 'scoring', partition: 0, offset: '0', key: Buffer.from('a1'), value: Buffer.from(value), headers: {}, timestampMs: 0 });

describe('acgp.scoring message', () => {
  it('carries the trace text as received, the event time and the record without per-check latencies', () => {
    const text = JSON.stringify(trace);
    const reply = { topic: 'p.replies', partition: 2, correlation_id: 'c1' };
    const obj = JSON.parse(scoringJson(text, 1767225600000, record, reply));
    expect(obj.trace).toEqual(trace);
    expect(obj.event_time_ms).toBe(1767225600000);
    expect(obj.reply).toEqual(reply);
    expect(obj.decision).toBeUndefined();
    const { tripwires, rules, ...rest } = obj.decision_record;
    const { tripwires: _t, rules: _r, ...expected } = record;
    expect(rest).toEqual(expected);
    expect(tripwires).toEqual([{ id: 'tw', fired: false }, { id: 'tw2', fired: true, decision: 'flag', reason: 'r', severity: 'minor', error: { code: 'X', message: 'y' } }]);
    expect(rules).toEqual([{ id: 'r1', passed: false, decision: 'block', reason: 'no' }]);
    expect(record.tripwires[0].latencyMs).toBe(0.2); // the engine's record is not modified
  });

  it('parses into the decision fields the verdict takes over and the record score() receives', () => {
    const s = parseScoring(inMsg(scoringJson(JSON.stringify(trace), 1767225600000, record, undefined)));
    expect(s.trace).toEqual(trace);
    expect(s.decisionForScore).toEqual(compactRecord(record));
    const d = decisionMessage(record, trace, 1767225600000, 0);
    expect(s.decision).toEqual({ ...JSON.parse(JSON.stringify(d)), tripwires: d.tripwires.map((t) => JSON.parse(JSON.stringify(t))), rules: d.rules.map((r) => JSON.parse(JSON.stringify(r))) });
    expect(s.decision.event_time_ms).toBe(1767225600000);
    expect(s.reply).toBeUndefined();
  });

  it('without a record, score() receives the decision built from the trace (as the earlier form sent)', () => {
    const s = parseScoring(inMsg(scoringJson(JSON.stringify(trace), 5, undefined, undefined)));
    expect(s.decisionForScore).toEqual(decisionInputOf(s.decision));
    expect(s.decision).toMatchObject({ trace_id: 't-1', agent_id: 'a1', intervention: 'ok', event_time_ms: 5 });
  });

  it('still reads the earlier form {trace, decision, decision_record}', () => {
    const decision = decisionMessage(record, trace, 42, 43, '0.1.0');
    const s = parseScoring(inMsg(JSON.stringify({ trace, decision, decision_record: record })));
    expect(s.decision.event_time_ms).toBe(42);
    expect(s.decision.decided_at_ms).toBe(43);
    expect(s.decisionForScore).toEqual(record);
  });

  it('rejects malformed messages with the DLQ codes', () => {
    expect(() => parseScoring(inMsg('{'))).toThrow(expect.objectContaining({ code: 'STEWARD_TRACE_JSON' }));
    expect(() => parseScoring(inMsg(JSON.stringify({ trace })))).toThrow(expect.objectContaining({ code: 'STEWARD_TRACE_SCHEMA' }));
    expect(() => parseScoring(inMsg(JSON.stringify({ decision: { trace_id: 't' } })))).toThrow(expect.objectContaining({ code: 'STEWARD_TRACE_SCHEMA' }));
    expect(() => parseScoring(inMsg(JSON.stringify({ trace, decision: {} })))).toThrow(expect.objectContaining({ code: 'STEWARD_TRACE_SCHEMA' }));
    expect(() => parseScoring(inMsg(JSON.stringify({ trace: { trace_id: 't' }, event_time_ms: 1 })))).toThrow(expect.objectContaining({ code: 'STEWARD_TRACE_SCHEMA' }));
    // the earlier form's decision must name the trace it comes with (its ids go into the verdict)
    const other = decisionMessage(record, { ...trace, trace_id: 'someone-else' }, 42, 43);
    expect(() => parseScoring(inMsg(JSON.stringify({ trace, decision: other })))).toThrow(expect.objectContaining({ code: 'STEWARD_TRACE_SCHEMA' }));
  });

  it('keeps only a reply route the tripwire stage could have written', () => {
    const route = { topic: 'p.replies', partition: 3, correlation_id: 'c-1' };
    const withReply = (reply: unknown) => parseScoring(inMsg(`${scoringJson(JSON.stringify(trace), 5, record, undefined).slice(0, -1)},"reply":${JSON.stringify(reply)}}`), 'p.replies').reply;
    expect(withReply(route)).toEqual(route);
    for (const bad of [{ ...route, topic: 'p.decisions' }, { ...route, partition: -1 }, { ...route, partition: '3' }, { ...route, partition: 1.5 }, { ...route, correlation_id: 'x'.repeat(300) }, { ...route, correlation_id: 7 }, 'p.replies', null]) {
      expect(withReply(bad), JSON.stringify(bad)).toBeUndefined();
    }
    // without the replies topic nothing is answered
    expect(parseScoring(inMsg(scoringJson(JSON.stringify(trace), 5, record, route))).reply).toBeUndefined();
  });
});
