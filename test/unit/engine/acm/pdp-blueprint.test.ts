/** test/golden/acm/pdp-blueprint.yaml: blueprint conditions over the §14.1 input, combined with the ACM checks. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { governAcmEvent, MemoryAcmStateStore } from '../../../../src/engine/acm/index.js';
import { compileBlueprintSet, createAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';
import { DSL } from './helpers.js';

const doc = parse(readFileSync(join(__dirname, '../../../golden/acm/pdp-blueprint.yaml'), 'utf8')) as any;

describe('pdp-blueprint.yaml', () => {
  it('answers each event with the most severe of the blueprint and the run checks', async () => {
    const config = defaultEngineConfig();
    const res = compileBlueprintSet([{ file: 'bp.yaml', text: doc.blueprint }], { config });
    expect(res.errors.map((e) => e.format())).toEqual([]);
    const engine = new StewardEngine({
      blueprints: () => res.set!,
      registry: createAgentRegistry([{ id: 'a', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true }]),
      config,
      state: new MemoryStateStore(),
      trustDebt: new MemoryTrustDebtStore(),
      engineVersion: 'test',
    });
    const store = new MemoryAcmStateStore();
    const env = { dsl: DSL, planCache: new Map() };
    let n = 0;
    const play = async (f: Record<string, unknown>) => {
      const trace = { trace_id: `p${++n}`, agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', run: { runId: 'run-1' }, ...f } as unknown as Trace;
      let rules: { id: string; passed: boolean }[] = [];
      const out = await governAcmEvent(store, trace, { env, tenant: 'acme', nowMs: n * 1000 }, async () => {
        const d = await engine.decide(trace, n * 1000);
        const s = await engine.score(trace, d, n * 1000);
        rules = d.rules;
        return { blueprint: s.blueprint, intervention: s.intervention, stage: s.stage, rules: d.rules, tripwires: d.tripwires };
      });
      return { out, rules };
    };
    expect((await play({ hook: 'context.packet', context: doc.context })).out.kind).toBe('decided');
    expect((await play({ hook: 'plan', ...doc.plan })).out.kind).toBe('decided');
    for (const e of doc.events) {
      const { expect: want, rule, acm, ...fields } = e;
      const { out, rules } = await play(fields);
      expect(out.kind).toBe('decided');
      if (out.kind !== 'decided') continue;
      const label = `${e.hook} ${e.task?.id ?? `${e.from}->${e.to}`}`;
      expect(out.intervention, label).toBe(want);
      expect(rules.filter((r) => !r.passed).map((r) => r.id), label).toEqual(rule ? [rule] : []);
      expect((out.check?.violations ?? []).map((v) => v.code), label).toEqual(acm ? [acm] : []);
    }
  });
});
