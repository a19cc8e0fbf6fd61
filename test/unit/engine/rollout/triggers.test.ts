import { describe, expect, it } from 'vitest';
import { compileTrigger, countsOf, firingTrigger, type ArmCounts, type CompiledTrigger } from '../../../../src/engine/rollout/triggers.js';

const c = (n: number, halt: number, extra: Partial<ArmCounts> = {}): ArmCounts => ({ n, intervention: halt, halt, block: halt, error: 0, ...extra });
const t = (s: string) => compileTrigger(s) as CompiledTrigger;

describe('rollback triggers', () => {
  it('compile: absolute, delta, window, manual, and errors for unknown metrics and bad windows', () => {
    expect(t('halt_rate > 1%')).toMatchObject({ metric: 'halt_rate', delta: false, op: '>', threshold: 0.01 });
    expect(t('intervention_rate_delta >= 10% over 10m')).toMatchObject({ metric: 'intervention_rate', delta: true, op: '>=', threshold: 0.1, windowMs: 600_000 });
    expect(compileTrigger('manual_trigger')).toBe('manual');
    expect(compileTrigger('latency > 5%')).toEqual({ error: expect.stringContaining("unknown metric 'latency'") });
    expect(compileTrigger('halt_rate > 1% over soon')).toEqual({ error: expect.stringContaining("bad window 'soon'") });
    expect(compileTrigger('halt_rate < 1%')).toEqual({ error: expect.stringContaining('expected') });
  });

  it('fires on the canary rate or on the canary-stable delta, only with enough samples per arm', () => {
    const abs = [t('halt_rate > 10%')];
    expect(firingTrigger(abs, c(20, 3), c(0, 0), 20)?.canaryValue).toBeCloseTo(0.15);
    expect(firingTrigger(abs, c(19, 19), c(0, 0), 20)).toBeUndefined();
    expect(firingTrigger(abs, c(20, 2), c(0, 0), 20)).toBeUndefined();
    const delta = [t('halt_rate_delta > 20%')];
    expect(firingTrigger(delta, c(20, 10), c(20, 4), 20)).toMatchObject({ canaryValue: 0.5, stableValue: 0.2 });
    expect(firingTrigger(delta, c(20, 10), c(20, 8), 20)).toBeUndefined();
    expect(firingTrigger(delta, c(20, 10), c(5, 0), 20)).toBeUndefined();
  });

  it('counts a decision per metric', () => {
    expect(countsOf({ intervention: 'halt', halted: true, tripwires: [], rules: [] })).toEqual({ n: 1, intervention: 1, halt: 1, block: 1, error: 0 });
    expect(countsOf({ intervention: 'ok', halted: false, tripwires: [{ error: { code: 'x' } }], rules: [] })).toEqual({ n: 1, intervention: 0, halt: 0, block: 0, error: 1 });
  });
});
