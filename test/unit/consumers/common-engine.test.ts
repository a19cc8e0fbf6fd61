import { describe, expect, it } from 'vitest';
import { decisionMessage, verdictMessage } from '../../../src/consumers/common-engine.js';
import { blockedRecord, shellTrace as trace } from './fixtures.js';

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
    });
    expect(JSON.parse(JSON.stringify(m)).tripwires).toEqual([{ id: 'tw', fired: false }]);
  });

  it('reads a nested tripwire-stage result and fills defaults for what is missing', () => {
    const nested = decisionMessage({ agent: { tenant: 'acme' }, tripwireStage: { blueprint: 'b@1', intervention: 'halt', stage: 'tripwire', latencyMs: 2 } }, trace, 1, 2);
    expect(nested).toMatchObject({ tenant: 'acme', blueprint: 'b@1', intervention: 'halt', approved: false, halted: true, stage: 'tripwire', latency_ms: 2, tripwires: [], rules: [], reasons: [] });
    const empty = decisionMessage(undefined, trace, 1, 2);
    expect(empty).toMatchObject({ tenant: '', blueprint: '', intervention: 'ok', approved: true, halted: false, stage: 'none', latency_ms: 0 });
  });
});

describe('verdictMessage', () => {
  const trace = { trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call' as const, tool: 'x' };
  // a non-halting tripwire fired with severity severe (nudge), then CTQ blocked
  const decision = decisionMessage({ traceId: 't', agentId: 'a', intervention: 'nudge', stage: 'tripwire', severity: 'severe', halted: false, tripwires: [], rules: [], reasons: [] }, trace, 1, 2);
  it('keeps the tripwire severity only when the tripwire decided (trust debt weights it)', () => {
    expect(decision.severity).toBe('severe');
    expect(verdictMessage({ intervention: 'block', stage: 'ctq', severity: undefined }, decision, 3).severity).toBeUndefined();
    expect(verdictMessage({ intervention: 'nudge', stage: 'tripwire', severity: 'severe' }, decision, 3).severity).toBe('severe');
    // a record that says nothing about the stage (an engine without score records) keeps the decision's
    expect(verdictMessage({}, decision, 3).severity).toBe('severe');
  });
});
