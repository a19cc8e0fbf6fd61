import type { AgentInfo, CompiledBlueprint, LlmClient, LlmRequest, Trace } from '../../../../src/engine/types.js';
import { createDefaultScorerRegistry, type ScorerContext } from '../../../../src/engine/scorers/index.js';

export const agent: AgentInfo = { id: 'a-1', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true };

export function bp(over: Partial<CompiledBlueprint> = {}): CompiledBlueprint {
  const never = { source: 'x', async: false, functions: new Set<string>(), evaluate: () => true };
  return {
    id: 'test/bp@1.0',
    version: '1.0.0',
    description: 'test',
    chain: ['clarity.baseline@1.0'],
    scope: {},
    tripwires: [{ id: 'tw1', when: () => true, condition: never, evalTier: 0, latencyBudgetMs: 10, requiresState: false, severity: 'standard', onFail: { decision: 'halt', reason: 'r' } }],
    rules: ['r1', 'r2', 'r3'].map((id) => ({ id, when: () => true, condition: never, onFail: { decision: 'block' as const, reason: id } })),
    metrics: [],
    ctq: { aggregation: 'weighted_average' },
    scoring: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 },
    trustDebt: {} as CompiledBlueprint['trustDebt'],
    lists: {},
    resolved: {},
    ...over,
  };
}

export function trace(over: Partial<Trace> = {}): Trace {
  return { trace_id: 't-1', agent_id: 'a-1', timestamp: '2025-01-01T00:00:00Z', hook: 'output', ...over };
}

export function ctx(over: Partial<ScorerContext> = {}): ScorerContext {
  return { blueprint: bp(), agent, nowMs: Date.parse('2025-01-01T00:00:00Z'), registry: createDefaultScorerRegistry({ backoffMs: 1 }), ...over };
}

/** An in-process LlmClient for unit tests of the scorer logic; wire-protocol tests use test/support/llm-server.ts. */
export function scriptedLlm(answer: (req: LlmRequest, n: number) => string | Error): LlmClient & { calls: LlmRequest[] } {
  const calls: LlmRequest[] = [];
  return {
    calls,
    async complete(req) {
      calls.push(req);
      const a = answer(req, calls.length);
      if (a instanceof Error) throw a;
      return { text: a, latencyMs: 1 };
    },
  };
}
