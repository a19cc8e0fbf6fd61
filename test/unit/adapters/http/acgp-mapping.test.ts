import { describe, expect, it } from 'vitest';
import { acgpEventToTrace } from '../../../../src/adapters/http/acgp-mapping.js';
import { validateTrace } from '../../../../src/adapters/kafka/serde.js';
import { agentForKey, apiKeyHash, KeyRateLimiter } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/index.js';

const now = () => new Date('2026-06-01T00:00:00Z');

describe('acgp event → trace, field by field (docs/http.md "Mapping")', () => {
  const ev = {
    trace_id: 't-1',
    agent_type: 'executor',
    agent_tag: 'B',
    goal: 'refund order 42',
    user_query: 'please refund',
    reasoning_text: 'the order qualifies',
    final_output: 'Refunded.',
    output_type: 'execution_result',
    context_information: { order: 42 },
    documents_used: ['policy.pdf', 'faq.md'],
    similarity_scores: [0.9, 0.7],
    timestamp: '2026-05-31T10:11:12.123456',
    idempotency_key: 'b_t-1',
    agent_id: 'someone-else',
    hook: 'tool_call',
  };
  const t = acgpEventToTrace(ev, 'agent-from-key', now);
  it('agent from the key, never the body', () => expect(t.agent_id).toBe('agent-from-key'));
  it('trace_id as sent', () => expect(t.trace_id).toBe('t-1'));
  it('hook: output with a final_output, the body hook ignored', () => expect(t.hook).toBe('output'));
  it('hook: plan for a reasoning step without final_output', () => expect(acgpEventToTrace({ ...ev, final_output: '' }, 'a', now).hook).toBe('plan'));
  it('content from final_output', () => expect(t.content).toBe('Refunded.'));
  it('reasoning from reasoning_text', () => expect(t.reasoning).toBe('the order qualifies'));
  it('sources from documents_used (or context_information.documents_used, as TraceContext sends them)', () => {
    expect(t.sources).toEqual([{ id: 'policy.pdf' }, { id: 'faq.md' }]);
    expect(acgpEventToTrace({ trace_id: 'x', context_information: { documents_used: ['a.md'] } }, 'a', now).sources).toEqual([{ id: 'a.md' }]);
  });
  it('zone-less timestamp read as UTC; a zoned one kept', () => {
    expect(t.timestamp).toBe('2026-05-31T10:11:12.123456Z');
    expect(acgpEventToTrace({ trace_id: 'x', timestamp: '2026-05-31T10:11:12+02:00' }, 'a', now).timestamp).toBe('2026-05-31T10:11:12+02:00');
    // Not checked while mapping: every caller validates the trace, and an unreadable time fails there.
    expect(() => validateTrace(acgpEventToTrace({ trace_id: 'x', timestamp: 'yesterday' }, 'a', now))).toThrow(/STEWARD_TRACE_SCHEMA|timestamp/);
  });
  it('end_time, then start_time, then now when no timestamp', () => {
    expect(acgpEventToTrace({ trace_id: 'x', start_time: '2026-01-01T00:00:00', end_time: '2026-01-01T00:00:05' }, 'a', now).timestamp).toBe('2026-01-01T00:00:05Z');
    expect(acgpEventToTrace({ trace_id: 'x' }, 'a', now).timestamp).toBe('2026-06-01T00:00:00.000Z');
  });
  it('context: context_information, plus the other acgp fields under context.acgp', () => {
    expect(t.context).toEqual({ order: 42, acgp: { agent_type: 'executor', agent_tag: 'B', goal: 'refund order 42', user_query: 'please refund', output_type: 'execution_result', similarity_scores: [0.9, 0.7] } });
  });
});

describe('API keys and rate limits (D24)', () => {
  it('finds the agent by the hash of its key; an unknown key finds none', () => {
    const reg = createAgentRegistry([{ id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true, apiKeys: [apiKeyHash('k-1')] }]);
    expect(agentForKey(reg, 'k-1')?.id).toBe('a');
    expect(agentForKey(reg, 'k-2')).toBeUndefined();
    expect(apiKeyHash('k-1')).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
  it('allows a burst of twice the rate, then asks to retry after whole seconds', () => {
    let t = 0;
    const l = new KeyRateLimiter(2, () => t);
    expect([1, 2, 3, 4].map(() => l.take('k'))).toEqual([0, 0, 0, 0]);
    expect(l.take('k')).toBe(1);
    expect(l.take('other')).toBe(0);
    t = 500;
    expect(l.take('k')).toBe(0);
  });
});
