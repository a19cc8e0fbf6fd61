import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, PROFILES } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';

describe('CTQ profiles (§7.3)', () => {
  it.each(Object.entries(PROFILES))('%s: weights sum to 1, thresholds descend, patterns are valid RE2', (_name, p) => {
    expect(Object.values(p.metrics).reduce((s, m) => s + m.weight, 0)).toBeCloseTo(1);
    const t = p.thresholds;
    expect(t.ok >= t.nudge && t.nudge >= t.flag && t.flag >= t.block).toBe(true);
    for (const m of Object.values(p.metrics))
      for (const pat of (m.parameters.patterns as { pattern: string }[] | undefined) ?? []) expect(() => RE2JS.compile(pat.pattern)).not.toThrow();
  });

  it('the four spec profiles exist with their intent: finance-strict stricter than default, safety-critical strictest and equal weights', () => {
    expect(Object.keys(PROFILES).sort()).toEqual(['code-assistant', 'default-general', 'finance-strict', 'safety-critical']);
    expect(PROFILES['finance-strict'].thresholds.ok).toBeGreaterThan(PROFILES['default-general'].thresholds.ok);
    expect(new Set(Object.values(PROFILES['safety-critical'].metrics).map((m) => m.weight)).size).toBe(1);
    const sc = PROFILES['safety-critical'].thresholds;
    for (const p of Object.values(PROFILES)) expect(sc.block).toBeGreaterThanOrEqual(p.thresholds.block);
    const ca = PROFILES['code-assistant'].metrics;
    expect(ca.tool_safety.weight).toBeGreaterThan(ca.ethical_alignment.weight);
    expect(ca.dangerous_operations.scorer).toBe('pattern-match');
  });

  it('a profile expands into metrics; explicit metrics override by name; explicit thresholds replace', () => {
    const text = `id: p@1.0\nversion: "1.0.0"\ndescription: p\nctq:\n  profile: finance-strict\n  metrics:\n    tool_safety: { weight: 0.5, scorer: my-scorer }\n  thresholds: { ok: 0.95 }\n`;
    const bp = compileBlueprintSet([{ file: 'p.yaml', text }], { config: defaultEngineConfig() }).set!.get('p')!;
    const ctq = bp.metrics.filter((m) => m.id.startsWith('ctq.'));
    expect(ctq.map((m) => m.name).sort()).toEqual(Object.keys(PROFILES['finance-strict'].metrics).sort());
    expect(ctq.find((m) => m.name === 'tool_safety')).toMatchObject({ weight: 0.5, scorer: 'my-scorer' });
    expect(bp.ctq).toEqual({ aggregation: 'weighted_average', profile: 'finance-strict', thresholds: { ok: 0.95 } });
    expect(ctq.every((m) => m.when({ trace_id: 't', agent_id: 'a', timestamp: '', hook: 'plan' }))).toBe(true);
  });
});
