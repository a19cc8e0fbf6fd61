/**
 * Custom DSL functions reach blueprints (ACGP-1004 §9.4.6 extension registry): compileBlueprintSet and
 * the blueprint watcher take a FunctionRegistry; calls are checked at load with FILE:LINE:COL + path.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchBlueprints } from '../../../../src/adapters/fs/blueprint-watcher.js';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { FunctionRegistry } from '../../../../src/engine/dsl/index.js';
import { runTripwireStage } from '../../../../src/engine/tripwires/index.js';
import type { AgentInfo, EvalContext, Trace, TripwireStageResult } from '../../../../src/engine/types.js';

const functions = new FunctionRegistry()
  .register({ name: 'word_count', params: [{ name: 'text', type: 'any' }], returns: 'number', impl: ([t]) => (typeof t === 'string' ? t.split(/\s+/).filter(Boolean).length : undefined) })
  .register({
    name: 'geo.in_region',
    params: [{ name: 'ip', type: 'any' }, { name: 'region', type: 'string', literal: true }],
    returns: 'boolean',
    impl: ([ip, region]) => region === 'eu' && typeof ip === 'string' && ip.startsWith('10.'),
  });

const blueprint = (tripwires: string): string => `id: acme/custom@1.0
version: "1.0.0"
description: custom functions
checks:
  - id: r
    when: { hook: output }
    rule: { condition: "true", on_fail: { decision: flag, reason: never } }
scoring: { thresholds: { ok: 0.2, nudge: 0.4, escalate: 0.6, block: 0.8 } }
tripwires:
${tripwires}`;

const GOOD = blueprint(`  - id: short_answer
    condition: "word_count(content) <= 5"
    on_fail: { decision: block, reason: too long }
  - id: eu_only
    condition:
      all:
        - geo.in_region(destination, "eu")
    on_fail: { decision: escalate, reason: outside the EU }
`);

const agent: AgentInfo = { id: 'a', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true };
const ctx = (trace: Partial<Trace>): EvalContext => ({
  trace: { trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', ...trace },
  agent,
  trustDebt: 0,
  nowMs: 0,
  stateNamespace: 'acme:a',
});

describe('custom DSL functions in blueprints', () => {
  it('compiles and evaluates a blueprint that calls registered functions', () => {
    const res = compileBlueprintSet([{ file: 'bp.yaml', text: GOOD }], { config: defaultEngineConfig(), functions });
    expect(res.errors).toEqual([]);
    const bp = res.set!.get('acme/custom@1.0')!;
    const ok = runTripwireStage(bp, ctx({ content: 'two words', destination: '10.1.2.3' })) as TripwireStageResult;
    expect(ok.intervention).toBe('ok');
    expect(ok.tripwires.map((t) => [t.id, t.fired])).toEqual([
      ['short_answer', false],
      ['eu_only', false],
    ]);
    const bad = runTripwireStage(bp, ctx({ content: 'one two three four five six', destination: '8.8.8.8' })) as TripwireStageResult;
    expect(bad.intervention).toBe('block');
    expect(bad.tripwires.filter((t) => t.fired).map((t) => t.id)).toEqual(['short_answer', 'eu_only']);
  });

  it('without the registry the same blueprint is rejected: unknown function, positioned', () => {
    const res = compileBlueprintSet([{ file: 'bp.yaml', text: GOOD }], { config: defaultEngineConfig() });
    expect(res.set).toBeUndefined();
    expect(res.errors.map((e) => [e.code, e.position?.file, e.position?.line, e.position?.col])).toEqual([
      ['STEWARD_DSL_UNKNOWN_FUNCTION', 'bp.yaml', 11, 17],
      ['STEWARD_DSL_UNKNOWN_FUNCTION', 'bp.yaml', 16, 11],
    ]);
  });

  it('reports wrong arity and a non-literal argument at the call, with the JSON path', () => {
    const text = blueprint(`  - id: arity
    condition: "word_count(content, reasoning) <= 5"
    on_fail: { decision: block, reason: r }
  - id: literal
    condition: "geo.in_region(destination, region)"
    on_fail: { decision: block, reason: r }
`);
    const res = compileBlueprintSet([{ file: 'bp.yaml', text }], { config: defaultEngineConfig(), functions });
    expect(res.errors.map((e) => [e.code, e.position?.line, e.position?.col, e.position?.path])).toEqual([
      ['STEWARD_DSL_ARITY', 11, 17, '$.tripwires[0].condition'],
      ['STEWARD_DSL_TYPE', 14, 44, '$.tripwires[1].condition'],
    ]);
    expect(res.errors[0]!.message).toContain('word_count() takes 1 argument(s) (text), got 2');
    expect(res.errors[0]!.format()).toMatch(/^bp\.yaml:11:17: STEWARD_DSL_ARITY: /);
  });

  it('suggests the closest function name for a typo, registry names included', () => {
    const text = blueprint(`  - id: typo
    condition: "word_cuont(content) <= 5"
    on_fail: { decision: block, reason: r }
  - id: builtin_typo
    condition: "NOT is_externel(destination)"
    on_fail: { decision: block, reason: r }
`);
    const res = compileBlueprintSet([{ file: 'bp.yaml', text }], { config: defaultEngineConfig(), functions });
    expect(res.errors.map((e) => [e.code, e.position?.line, e.position?.col])).toEqual([
      ['STEWARD_DSL_UNKNOWN_FUNCTION', 11, 17],
      ['STEWARD_DSL_UNKNOWN_FUNCTION', 14, 21],
    ]);
    expect(res.errors[0]!.message).toContain("did you mean 'word_count'?");
    expect(res.errors[1]!.message).toContain("did you mean 'is_external'?");
  });
});

describe('blueprint watcher with custom functions', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('loads and reloads against the registry it was given', async () => {
    dir = mkdtempSync(join(tmpdir(), 'steward-fn-'));
    writeFileSync(join(dir, 'bp.yaml'), GOOD);
    const holder = await watchBlueprints(dir, { config: defaultEngineConfig(), functions, watch: false });
    try {
      expect(holder.current().get('acme/custom@1.0')?.tripwires.map((t) => t.id)).toEqual(['short_answer', 'eu_only']);
      writeFileSync(join(dir, 'bp.yaml'), GOOD.replace('word_count(content) <= 5', 'word_count(content) <= 50'));
      const ev = await holder.reload();
      expect(ev.ok).toBe(true);
      writeFileSync(join(dir, 'bp.yaml'), GOOD.replace('word_count(content)', 'word_count()'));
      const bad = await holder.reload();
      expect(bad.ok).toBe(false);
      expect(bad.errors.map((e) => e.code)).toEqual(['STEWARD_DSL_ARITY']);
    } finally {
      holder.close();
    }
  });
});
