// issue #22 item 8: a text scan (contains_entity, matches over structured values) that cannot finish within
// its bounds is "cannot evaluate", so the tripwire over it fails closed — an SSN nested below the old depth
// limit or behind 10 000 harmless values used to read as "no SSN" and pass.
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, createAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { MAX_SCAN_DEPTH, MAX_SCAN_ITEMS, someText } from '../../../../src/engine/dsl/values.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';

const SSN = '219-09-9998';
const nested = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : { x: nested(depth - 1, leaf) });
const isSsn = (s: string) => s.includes(SSN);

describe('bounded text scans fail closed', () => {
  it('finds what is within the bounds, and says "cannot evaluate" instead of "no" beyond them', () => {
    expect(someText(nested(MAX_SCAN_DEPTH, SSN), isSsn)).toBe(true);
    expect(someText(nested(MAX_SCAN_DEPTH - 1, 'fine'), isSsn)).toBe(false);
    expect(() => someText(nested(MAX_SCAN_DEPTH + 5, SSN), isSsn)).toThrow(expect.objectContaining({ code: 'STEWARD_DSL_EVAL', message: expect.stringMatching(/cut off at depth/) }));
    const many = [...Array.from({ length: MAX_SCAN_ITEMS }, () => 'x'), SSN];
    expect(() => someText(many, isSsn)).toThrow(/cut off after 10000 values/);
    // a match found before the bound is an answer
    expect(someText([SSN, ...many], isSsn)).toBe(true);
    // empty containers at the depth bound are not cut-offs
    expect(someText(nested(MAX_SCAN_DEPTH, {}), isSsn)).toBe(false);
  });

  it('a PII tripwire over deeply nested arguments fails closed (block, error recorded)', async () => {
    const config = defaultEngineConfig();
    const set = compileBlueprintSet(
      [
        {
          file: 'pii.yaml',
          text: `id: t/pii@1.0\nversion: "1.0.0"\ndescription: pii\nscope: { agent_tier: [ACL-2] }\ntripwires:\n  - id: no_ssn\n    severity: critical\n    when: { hook: tool_call }\n    condition: 'NOT contains_entity(args, "ssn")'\n    on_fail: { decision: block, reason: SSN in arguments }\n`,
        },
      ],
      { config },
    ).set!;
    const engine = new StewardEngine({ blueprints: () => set, registry: createAgentRegistry([{ id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true }]), config, state: new MemoryStateStore(), trustDebt: new MemoryTrustDebtStore(), engineVersion: 't' });
    const d = await engine.decide({ trace_id: 't1', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'x', args: nested(40, SSN) as Record<string, unknown> }, 0);
    expect(d.intervention).toBe('block');
    expect(d.tripwires[0]).toMatchObject({ id: 'no_ssn', fired: true, error: { code: 'STEWARD_DSL_EVAL' } });
    const ok = await engine.decide({ trace_id: 't2', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'x', args: nested(5, 'fine') as Record<string, unknown> }, 0);
    expect(ok.intervention).toBe('ok');
  });
});
