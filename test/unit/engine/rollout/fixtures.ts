// Two versions of one blueprint for rollout, shadow and diff tests: 2.0.0 halts from n > 10, 1.0.0 from n > 100.
import { compileBlueprintSet, createAgentRegistry, type BlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';

export const ROLL_V1 = `
id: t/roll@1.0.0
version: "1.0.0"
description: rollout test, stable
tripwires:
  - id: big
    severity: critical
    when: { hook: tool_call }
    condition: "args.n <= 100"
    on_fail: { decision: halt, reason: too big }
checks:
  - id: small
    when: { hook: tool_call }
    rule: { condition: "args.n <= 50", on_fail: { decision: block, reason: over fifty } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;

export const ROLL_V2 = `
id: t/roll@2.0.0
version: "2.0.0"
description: rollout test, canary
tripwires:
  - id: big
    severity: critical
    when: { hook: tool_call }
    condition: "args.n <= 10"
    on_fail: { decision: halt, reason: too big }
checks:
  - id: small
    when: { hook: tool_call }
    rule: { condition: "args.n <= 5", on_fail: { decision: block, reason: over five } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
rollback:
  trigger:
    - halt_rate_delta > 20%
    - manual_trigger
`;

export function rollSet(...texts: string[]): BlueprintSet {
  const res = compileBlueprintSet(texts.map((text, i) => ({ file: `roll-${i}.yaml`, text })), { config: defaultEngineConfig() });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  return res.set;
}

export const rollRegistry = (ids: string[]) => createAgentRegistry(ids.map((id) => ({ id, tenant: 'ten', tier: 'ACL-2' as const, tools: [], domains: [], registered: true })));

export const toolCall = (agent: string, trace: string, n: number) => ({
  trace_id: trace, agent_id: agent, timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'x', args: { n },
});
