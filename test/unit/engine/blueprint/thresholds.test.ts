import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, effectiveThresholds, riskToIntervention } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import type { CompiledBlueprint } from '../../../../src/engine/types.js';

const config = defaultEngineConfig();

function bp(extra: string): CompiledBlueprint {
  const res = compileBlueprintSet([{ file: 'x.yaml', text: `id: x@1.0\nversion: "1.0.0"\ndescription: x\n${extra}` }], { config });
  expect(res.errors).toEqual([]);
  return res.set!.get('x')!;
}

describe('effectiveThresholds', () => {
  it('takes the stricter (lower) boundary of blueprint and tier (§11.2)', () => {
    // §14: blueprint block 0.70 vs ACL-3 block 0.50 → 0.50; other boundaries equal.
    const b = bp('scoring:\n  thresholds: { ok: 0.20, nudge: 0.35, escalate: 0.50, block: 0.70 }\n');
    expect(effectiveThresholds(b, 'ACL-3', { restricted: false, config })).toEqual({ ok: 0.2, nudge: 0.35, escalate: 0.5, block: 0.5 });
    // ACL-0 is more lenient than the blueprint everywhere → the blueprint's values.
    expect(effectiveThresholds(b, 'ACL-0', { restricted: false, config })).toEqual({ ok: 0.2, nudge: 0.35, escalate: 0.5, block: 0.7 });
  });

  it('joins ctq.thresholds converted to risk space; flag boundary capped at escalate', () => {
    const b = bp('ctq:\n  thresholds: { ok: 0.9, nudge: 0.8, flag: 0.6, block: 0.35 }\n');
    // baseline scoring .30/.45/.60/.75, ACL-0 .35/.50/.65/.80, ctq → ok .1, nudge .2, flag .4, block .65
    const t = effectiveThresholds(b, 'ACL-0', { restricted: false, config });
    expect(t.ok).toBeCloseTo(0.1);
    expect(t.nudge).toBeCloseTo(0.2);
    expect(t.flag).toBeCloseTo(0.4);
    expect(t.escalate).toBeCloseTo(0.6);
    expect(t.block).toBeCloseTo(0.65);
    const low = bp('ctq:\n  thresholds: { flag: 0.2 }\n');
    // flag would be 0.8 in risk space, above escalate .55 (ACL-2): capped so it never relaxes an escalation.
    expect(effectiveThresholds(low, 'ACL-2', { restricted: false, config }).flag).toBeCloseTo(0.55);
  });

  it('restricted mode lowers every boundary by the configured amount, clamped at 0', () => {
    const b = bp('scoring:\n  thresholds: { ok: 0.05, nudge: 0.35, escalate: 0.50, block: 0.70 }\n');
    expect(effectiveThresholds(b, 'ACL-3', { restricted: true, config })).toEqual({ ok: 0, nudge: 0.25, escalate: 0.4, block: 0.4 });
    const cfg = defaultEngineConfig({ restrictedModeTightening: 0.2 });
    expect(effectiveThresholds(b, 'ACL-3', { restricted: true, config: cfg }).nudge).toBeCloseTo(0.15);
  });
});

describe('riskToIntervention', () => {
  const t = { ok: 0.2, nudge: 0.35, escalate: 0.5, block: 0.5 };
  it.each([
    [0, 'ok'],
    [0.2, 'ok'],
    [0.21, 'nudge'],
    [0.35, 'nudge'],
    [0.4, 'escalate'],
    [0.5, 'escalate'],
    [0.51, 'block'],
    [1, 'block'],
  ] as const)('risk %s → %s', (risk, want) => expect(riskToIntervention(risk, t)).toBe(want));
  it('uses the flag boundary when present and never returns halt', () => {
    const f = { ...t, flag: 0.45 };
    expect(riskToIntervention(0.4, f)).toBe('flag');
    expect(riskToIntervention(0.46, f)).toBe('escalate');
    expect(riskToIntervention(0.99, f)).toBe('block');
  });
});
