// The trust_debt block as the blueprint compiler sees it (ACGP-1004 §10, spec-decisions D7): load-time warnings
// for severities without a weight, validation of the effective (inherited + defaulted) settings with
// positions, and the compiled TrustDebtConfig.
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { accumulationFor, auditEnabled } from '../../../../src/engine/trust-debt/index.js';

const compile = (files: Record<string, string>) =>
  compileBlueprintSet(
    Object.entries(files).map(([file, text]) => ({ file, text })),
    { config: defaultEngineConfig() },
  );

const bp = (id: string, extra: string) => `id: ${id}
version: "1.0.0"
description: x
checks:
  - id: c
    when: { hook: never }
    rule: { condition: "true", on_fail: { decision: flag, reason: r } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
${extra}`;

const tripwire = (id: string, severity: string) => `  - id: ${id}
    severity: ${severity}
    condition: "true"
    on_fail: { decision: block, reason: r }
`;

describe('tripwire severities (§10.2, §10.5)', () => {
  it('warns for a severity named like an Object.prototype member and weighs it 1.0', () => {
    const sevs = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];
    const res = compile({ 'p.yaml': bp('t/p@1.0', `tripwires:\n${sevs.map((s, i) => tripwire(`tw${i}`, s)).join('')}`) });
    expect(res.errors.map((e) => e.format())).toEqual([]);
    const warned = res.warnings.filter((w) => w.message.includes('severity_weights'));
    expect(warned.map((w) => [w.position?.file, w.position?.line, w.position?.path])).toEqual(sevs.map((_, i) => ['p.yaml', 11 + 4 * i, `$.tripwires[${i}].severity`]));
    const td = res.set!.get('t/p@1.0')!.trustDebt;
    for (const s of sevs) expect(accumulationFor('block', s, td)).toBe(0.15);
  });

  it('does not warn for a severity the blueprint (or an ancestor) weighs, even one named constructor', () => {
    const res = compile({
      'a.yaml': bp('t/a@1.0', `trust_debt:\n  severity_weights: { constructor: 3 }\n`),
      'b.yaml': bp('t/b@1.0', `inherits: t/a@1.0\ntripwires:\n${tripwire('tw', 'constructor')}`).replace('checks:\n  - id: c', 'checks:\n  - id: c2'),
    });
    expect(res.errors.map((e) => e.format())).toEqual([]);
    expect(res.warnings.filter((w) => w.message.includes('severity_weights'))).toEqual([]);
    expect(accumulationFor('block', 'constructor', res.set!.get('t/b@1.0')!.trustDebt)).toBeCloseTo(0.45, 15);
  });
});

describe('severity_weights keys that are Object.prototype names', () => {
  it('an authored __proto__ weight is an own weight of the compiled config (not a prototype write)', () => {
    const res = compile({ 'w.yaml': bp('t/w@1.0', `trust_debt:\n  severity_weights: { __proto__: 3, toString: 2 }\ntripwires:\n${tripwire('tw', '__proto__')}`) });
    expect(res.errors.map((e) => e.format())).toEqual([]);
    expect(res.warnings.filter((w) => w.message.includes('severity_weights'))).toEqual([]);
    const td = res.set!.get('t/w@1.0')!.trustDebt;
    expect(Object.hasOwn(td.severityWeights, '__proto__')).toBe(true);
    expect(accumulationFor('block', '__proto__', td)).toBeCloseTo(0.45, 15);
    expect(accumulationFor('block', 'toString', td)).toBeCloseTo(0.3, 15);
    expect(accumulationFor('block', 'constructor', td)).toBe(0.15);
  });
});

describe('effective trust_debt thresholds (§10.1, §10.6)', () => {
  it("the reviewer's file (only re_tiering_review: 0.4) is rejected at that key", () => {
    const text = bp('t/r@1.0', 'trust_debt:\n  thresholds:\n    re_tiering_review: 0.4\n');
    const res = compile({ 'r.yaml': text });
    expect(res.set).toBeUndefined();
    expect(res.errors.map((e) => [e.code, e.position?.file, e.position?.line, e.position?.col, e.position?.path])).toEqual([
      ['STEWARD_BLUEPRINT_THRESHOLD_ORDER', 'r.yaml', 11, 24, '$.trust_debt.thresholds.re_tiering_review'],
    ]);
    expect(res.errors[0]!.format()).toMatch(/^r\.yaml:11:24/);
  });

  it('compiles the effective thresholds of a valid chain', () => {
    const res = compile({
      'p.yaml': bp('t/p@1.0', 'trust_debt:\n  thresholds: { restricted_mode: 0.6 }\n'),
      'c.yaml': bp('t/c@1.0', 'inherits: t/p@1.0\ntrust_debt:\n  thresholds: { re_tiering_review: 0.8 }\n').replace('id: c\n', 'id: c2\n'),
    });
    expect(res.errors.map((e) => e.format())).toEqual([]);
    expect(res.set!.get('t/c@1.0')!.trustDebt.thresholds).toEqual({ elevatedMonitoring: 0.3, restrictedMode: 0.6, reTieringReview: 0.8 });
  });
});

describe('good-behaviour audit is opt-in (§10.4.2, spec-decisions D7/D15)', () => {
  it('is off without a trust_debt block, on when the blueprint or an ancestor configures it', () => {
    const res = compile({
      'plain.yaml': bp('t/plain@1.0', ''),
      'p.yaml': bp('t/p@1.0', 'trust_debt:\n  recovery:\n    good_behavior_audit: { threshold_hours: 72 }\n'),
      'c.yaml': bp('t/c@1.0', 'inherits: t/p@1.0\ntrust_debt:\n  decay: { rate: 0.9 }\n').replace('id: c\n', 'id: c2\n'),
      'off.yaml': bp('t/off@1.0', 'inherits: t/p@1.0\ntrust_debt:\n  recovery: { enabled: false }\n').replace('id: c\n', 'id: c3\n'),
    });
    expect(res.errors.map((e) => e.format())).toEqual([]);
    const td = (id: string) => res.set!.get(id)!.trustDebt;
    expect(auditEnabled(td('t/plain@1.0'))).toBe(false);
    expect(auditEnabled(td('t/p@1.0'))).toBe(true);
    expect(td('t/p@1.0').recovery.goodBehaviorAudit).toEqual({ thresholdHours: 72, credit: -0.2 });
    expect(auditEnabled(td('t/c@1.0'))).toBe(true);
    expect(td('t/c@1.0').recovery.goodBehaviorAudit).toEqual({ thresholdHours: 72, credit: -0.2 });
    expect(auditEnabled(td('t/off@1.0'))).toBe(false);
    expect(td('t/off@1.0').recovery.successfulReviewCredit).toBe(-0.1);
  });
});
