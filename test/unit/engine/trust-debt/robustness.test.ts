// User-keyed lookups (tripwire severities, interventions read off Kafka, authored severity_weights keys)
// must never reach Object.prototype: `severityWeights['constructor']` is a function and made debt NaN.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TRUST_DEBT_CONFIG,
  HOUR_MS,
  MemoryTrustDebtStore,
  accumulationFor,
  advance,
  debtAt,
  deltaFor,
  levelActions,
  levelFor,
  levelRank,
  maxLevel,
  runAudits,
  trustDebtConfigFrom,
  type AgentDebtState,
  type TrustDebtEvent,
} from './imports.js';
import type { Intervention, TrustDebtLevel } from '../../../../src/engine/types.js';

const PROTO_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
const T0 = Date.UTC(2026, 0, 1);
const cfg = DEFAULT_TRUST_DEBT_CONFIG;

describe('severity and intervention names that exist on Object.prototype (§10.2: unknown severity weighs 1.0)', () => {
  it.each(PROTO_NAMES)('severity %s weighs 1.0', (sev) => {
    expect(accumulationFor('block', sev, cfg)).toBe(0.15);
    expect(accumulationFor('halt', sev, cfg)).toBe(0.5);
  });

  it.each(PROTO_NAMES)('intervention %s (e.g. a malformed verdict message) adds nothing', (name) => {
    expect(accumulationFor(name as Intervention, undefined, cfg)).toBe(0);
    expect(deltaFor({ eventId: 'e', tenant: 't', agentId: 'a', atMs: T0, kind: 'intervention', intervention: name as Intervention }, cfg)).toBe(0);
  });

  it('an unknown event kind moves nothing (never undefined → NaN)', () => {
    expect(deltaFor({ eventId: 'e', tenant: 't', agentId: 'a', atMs: T0, kind: 'constructor' as TrustDebtEvent['kind'] }, cfg)).toBe(0);
  });

  it('an agent hit by such severities keeps a finite debt and reaches the levels', async () => {
    const s = new MemoryTrustDebtStore();
    let after = 0;
    for (const [i, sev] of PROTO_NAMES.entries()) {
      const c = await s.apply({ eventId: `e${i}`, tenant: 't', agentId: 'a', atMs: T0, kind: 'intervention', intervention: 'block', severity: sev }, cfg);
      expect(Number.isFinite(c.after)).toBe(true);
      after = c.after;
    }
    expect(after).toBe(0.75); // 5 × 0.15, standard weight each
    expect(levelFor(after, cfg)).toBe('re_tiering_review');
    expect((await s.current('t', 'a', T0 + 24 * HOUR_MS, cfg)).debt).toBeCloseTo(0.75 * 0.95, 12);
  });

  it('authored severity_weights keys named __proto__ / constructor are own weights, not prototype writes', () => {
    // JSON.parse (like the YAML parser) creates an own "__proto__" key
    const weights = JSON.parse('{"__proto__": 3, "constructor": 4, "catastrophic": 10}') as Record<string, number>;
    const c = trustDebtConfigFrom({ severity_weights: weights });
    expect([null, Object.prototype]).toContain(Object.getPrototypeOf(c.severityWeights));
    expect(Object.hasOwn(c.severityWeights, '__proto__')).toBe(true);
    expect(accumulationFor('block', '__proto__', c)).toBeCloseTo(0.45, 15);
    expect(accumulationFor('block', 'constructor', c)).toBe(0.6);
    expect(accumulationFor('block', 'catastrophic', c)).toBe(1.5);
    expect(accumulationFor('block', 'toString', c)).toBe(0.15);
    expect(({} as Record<string, unknown>).catastrophic).toBeUndefined();
  });

  it('levels read off storage are looked up as own keys', () => {
    expect(levelRank('constructor' as TrustDebtLevel)).toBe(0);
    expect(levelActions('toString' as TrustDebtLevel)).toEqual(levelActions('normal'));
    expect(maxLevel('constructor' as TrustDebtLevel, 'restricted_mode')).toBe('restricted_mode');
  });
});

describe('a NaN debt left in storage by the severity bug', () => {
  // levelFor(NaN) was 'normal' (every comparison false), so reading it as the floor keeps what every
  // decision already saw and lets the agent accumulate again.
  const nan: AgentDebtState = { debt: Number.NaN, lastMs: T0, windowMs: T0, level: 'normal', applied: 3 };
  it('is read as the floor and accumulates again', () => {
    const floored = trustDebtConfigFrom({ decay: { min_debt: 0.1 } });
    expect(debtAt(nan, T0 + HOUR_MS, cfg)).toBe(0);
    expect(debtAt(nan, T0 + HOUR_MS, floored)).toBe(0.1);
    const r = advance(nan, { atMs: T0 + HOUR_MS, delta: 0.15, resetsWindow: true }, cfg);
    expect(r.change.before).toBe(0);
    expect(r.change.after).toBe(0.15);
  });
  it('does not make the audit loop run over every window', () => {
    const audit = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 0.001, credit: -0.2 } } });
    const t = performance.now();
    const { state } = runAudits(nan, T0 + 365 * 24 * HOUR_MS, audit);
    expect(performance.now() - t).toBeLessThan(200);
    expect(Number.isFinite(state.debt)).toBe(true);
  });
});
