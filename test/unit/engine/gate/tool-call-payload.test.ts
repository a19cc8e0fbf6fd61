/**
 * What the pre-tool gate's tier-1 patterns read, through StewardEngine.decide() as the tripwire stage runs it
 * (audit #20 r2 finding 6, D47): `args`, the contracts C1 `action` object — where the demo agent puts its SQL —
 * and `content`, object keys included. Only `args` values were scanned: the same SQL in `action.query` or as an
 * `args` key was allowed.
 */
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { FinalizationGate, MemoryGateJobStore } from '../../../../src/engine/gate/index.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';

const BP = `id: t/a@1.0
version: "1.0.0"
description: a
guardrails:
  - { id: no_drop, tier: 1, pattern: '(?i)\\bdrop\\s+table\\b', applies_to: [tool_call], message: destructive SQL }
`;

function engine() {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 's.yaml', text: BP }], { config });
  expect(res.errors.map((e) => e.format())).toEqual([]);
  const { registry } = parseAgentRegistry(`agents:\n  - { id: a1, tenant: acme, tier: ACL-2, tools: [database_query], domains: [] }\n`, 'agents.yaml');
  return new StewardEngine({ blueprints: () => res.set!, registry: registry!, config, trustDebt: new MemoryTrustDebtStore(), engineVersion: 't', gate: new FinalizationGate({ jobStore: new MemoryGateJobStore() }) });
}

const T = Date.UTC(2026, 6, 1);
const call = (id: string, extra: Partial<Trace>): Trace => ({ trace_id: id, agent_id: 'a1', timestamp: new Date(T).toISOString(), hook: 'tool_call', job_id: 'j1', tool: 'database_query', ...extra });

describe('pre-tool gate: tier-1 patterns over args, action and content, keys included', () => {
  it.each([
    ['args.query', { args: { query: 'DROP TABLE users' } }],
    ['action.query (the demo agent shape)', { action: { query: 'DROP TABLE users', table: 'users' } }],
    ['an args key', { args: { 'DROP TABLE users': true } }],
    ['an action key, nested', { action: { ops: [{ 'drop table users': 'now' }] } }],
  ])('%s → block', async (name, extra) => {
    const d = await engine().decide(call(name, extra as Partial<Trace>), T, `ev-${name}`);
    expect(d.intervention).toBe('block');
    expect(d.rules.filter((r) => !r.passed).map((r) => r.id)).toEqual(['gate:tier1:no_drop']);
  });
  it('a harmless query in action is allowed', async () => {
    const d = await engine().decide(call('ok', { action: { query: 'SELECT * FROM orders LIMIT 10', table: 'orders' } }), T, 'ev-ok');
    expect(d.intervention).toBe('ok');
  });
});
