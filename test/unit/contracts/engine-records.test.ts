import { describe, expect, it } from 'vitest';
import { decisionInputOf, decisionMessage, verdictMessage } from '../../../src/contracts/engine-records.js';
import { blockedRecord, scoreRecord, shellTrace as trace } from '../consumers/fixtures.js';

describe('decisionMessage', () => {
  it('maps a DecisionRecord onto the acgp.decisions message', () => {
    const record = blockedRecord({ severity: 'critical', trustDebt: { debt: 0, level: 'normal' }, nowMs: 1 });
    const m = decisionMessage(record, trace, 10, 20, '0.1.0');
    expect(m).toEqual({
      trace_id: 't-1',
      agent_id: 'a1',
      tenant: 'acme',
      blueprint: 'code/assistant@1.0',
      intervention: 'block',
      approved: false,
      stage: 'rule',
      halted: false,
      reasons: ['no'],
      severity: 'critical',
      tripwires: [{ id: 'tw', fired: false, decision: undefined, reason: undefined, error: undefined }],
      rules: [{ id: 'r1', passed: false, decision: 'block', reason: 'no', error: undefined }],
      latency_ms: 1.5,
      event_time_ms: 10,
      decided_at_ms: 20,
      hook: 'tool_call',
      tool: 'shell',
      session_id: 's1',
      engine_version: '0.1.0',
      blueprint_version: '1.0.0',
    });
    expect(decisionMessage({ ...record, rolloutArm: 'canary' }, trace, 10, 20).rollout_arm).toBe('canary');
    expect(JSON.parse(JSON.stringify(m)).tripwires).toEqual([{ id: 'tw', fired: false }]);
  });

  it('reads back the record of an earlier-form decision message, without what decide() read from state', () => {
    const m = decisionMessage(blockedRecord({ severity: 'critical', eventId: 'ev-9' }), trace, 10, 20, '0.1.0');
    const back = decisionInputOf(JSON.parse(JSON.stringify(m)));
    expect(back).toMatchObject({ traceId: 't-1', agentId: 'a1', tenant: 'acme', blueprint: 'code/assistant@1.0', intervention: 'block', stage: 'rule', halted: false, reasons: ['no'], severity: 'critical', latencyMs: 1.5, eventId: 'ev-9' });
    expect(back.rules).toEqual([{ id: 'r1', passed: false, decision: 'block', reason: 'no' }]);
    expect(back.trustDebt).toBeUndefined();
    expect(back.restricted).toBeUndefined();
    // an empty tenant is unknown, not a tenant named ''
    expect(decisionInputOf({ ...m, tenant: '' }).tenant).toBeUndefined();
  });
});

describe('verdictMessage', () => {
  const trace = { trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call' as const, tool: 'x' };
  // a non-halting tripwire fired with severity severe (nudge), then CTQ blocked
  const decision = decisionMessage(blockedRecord({ traceId: 't', agentId: 'a', intervention: 'nudge', stage: 'tripwire', severity: 'severe', halted: false, tripwires: [], rules: [], reasons: [] }), trace, 1, 2);
  it('keeps the tripwire severity only when the tripwire decided (trust debt weights it)', () => {
    expect(decision.severity).toBe('severe');
    expect(verdictMessage(scoreRecord({ intervention: 'block', stage: 'ctq', severity: undefined }), decision, 3).severity).toBeUndefined();
    expect(verdictMessage(scoreRecord({ intervention: 'nudge', stage: 'tripwire', severity: 'severe' }), decision, 3).severity).toBe('severe');
  });

  it('takes ids, event time and event id from the decision, the rest from the score record', () => {
    const v = verdictMessage(scoreRecord({ metrics: [{ name: 'clarity', score: 0.7, weight: 1, confidence: 0.8, scorer: 'rule-based', status: 'ok', explanation: 'x' }] }), { ...decision, event_id: 'ev-1' }, 3);
    expect(v).toMatchObject({ trace_id: 't', agent_id: 'a', tenant: 'acme', intervention: 'flag', approved: true, stage: 'ctq', ctq: 0.7, risk: 0.3, event_time_ms: 1, scored_at_ms: 3, event_id: 'ev-1' });
    expect(v.metrics).toEqual([{ name: 'clarity', score: 0.7, weight: 1, confidence: 0.8, scorer: 'rule-based', status: 'ok' }]);
  });
});
