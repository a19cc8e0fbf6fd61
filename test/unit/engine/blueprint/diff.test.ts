import { describe, expect, it } from 'vitest';
import { actualBump, diffBlueprints } from '../../../../src/engine/blueprint/diff.js';

const base = {
  id: 'x@1.0',
  version: '1.0.0',
  description: 'd',
  checks: [
    { id: 'r', when: { hook: 'tool_call' }, rule: { condition: 'args.n < 5', on_fail: { decision: 'flag', reason: 'r' } } },
    { id: 'm', when: { hook: 'output' }, metric: { name: 'm', weight: 0.5, check: { type: 'llm' } } },
  ],
  tripwires: [{ id: 't', condition: 'args.n < 9', severity: 'standard', on_fail: { decision: 'block', reason: 'r' } }],
  ctq: { thresholds: { ok: 0.8, nudge: 0.7 } },
  scoring: { thresholds: { ok: 0.2, nudge: 0.3, escalate: 0.4, block: 0.5 } },
};
type Bp = Record<string, any>;
const v = (version: string, f: (b: Bp) => void): Bp => {
  const b = structuredClone(base) as Bp;
  b.version = version;
  f(b);
  return b;
};
const classes = (a: Bp, b: Bp) => diffBlueprints(a, b).changes.map((c) => `${c.class} ${c.path}`);

describe('diffBlueprints (§13.3)', () => {
  it('no change → none; identical versions are fine', () => {
    expect(diffBlueprints(base, base)).toMatchObject({ changes: [], required: 'none', actual: 'none', ok: true });
  });

  it('tripwire severity change and tightened thresholds are breaking', () => {
    const b = v('1.1.0', (b) => {
      b.tripwires[0].severity = 'critical';
      b.scoring.thresholds.ok = 0.1;
      b.ctq.thresholds.ok = 0.9;
    });
    expect(classes(base, b)).toEqual(['breaking ctq.thresholds.ok', 'breaking scoring.thresholds.ok', 'breaking tripwires.t.severity']);
    expect(diffBlueprints(base, b)).toMatchObject({ required: 'major', actual: 'minor', ok: false });
  });

  it('added required evidence and required metric are breaking; optional ones minor', () => {
    const b = v('2.0.0', (b) => {
      b.evidence = { min_certified_sources: 1 };
      b.checks.push({ id: 'req', when: { hook: 'output' }, metric: { name: 'q', weight: 0.2, required: true, check: { type: 'llm' } } });
      b.checks.push({ id: 'opt', when: { hook: 'output' }, metric: { name: 'o', weight: 0.2, check: { type: 'llm' } } });
      b.tripwires.push({ id: 'new', condition: 'true', on_fail: { decision: 'flag', reason: 'r' } });
    });
    expect(classes(base, b)).toEqual(['breaking checks.req', 'breaking evidence', 'non-breaking checks.opt', 'non-breaking tripwires.new']);
    expect(diffBlueprints(base, b).ok).toBe(true);
  });

  it('relaxing and a more lenient decision are minor; reason text is patch', () => {
    const b = v('1.1.0', (b) => {
      b.scoring.thresholds.block = 0.6;
      b.checks[0].rule.on_fail = { decision: 'nudge', reason: 'changed' };
    });
    expect(classes(base, b)).toEqual(['non-breaking checks.r.rule.on_fail.decision', 'non-breaking scoring.thresholds.block', 'patch checks.r.rule.on_fail.reason']);
    expect(diffBlueprints(base, b)).toMatchObject({ required: 'minor', ok: true });
    expect(diffBlueprints(base, v('1.0.1', (b) => (b.description = 'new'))).ok).toBe(true);
    expect(diffBlueprints(base, v('1.0.1', (b) => (b.scoring.thresholds.block = 0.6))).ok).toBe(false);
  });

  it('a changed condition, removed metric or scope change is breaking', () => {
    const b = v('1.1.0', (b) => {
      b.checks[0].rule.condition = 'args.n < 6';
      b.checks.splice(1, 1);
      b.scope = { agent_tier: 'ACL-2' };
    });
    expect(classes(base, b)).toEqual(['breaking checks.m', 'breaking checks.r.rule.condition', 'breaking scope']);
  });

  it('actualBump', () => {
    expect(actualBump('1.2.3', '2.0.0')).toBe('major');
    expect(actualBump('1.2.3', '1.3.0')).toBe('minor');
    expect(actualBump('1.2.3', '1.2.4')).toBe('patch');
    expect(actualBump('1.2.3', '1.2.3')).toBe('none');
    expect(actualBump('1.2.3', '1.2.2')).toBe('downgrade');
    expect(diffBlueprints(base, v('0.9.0', () => {})).ok).toBe(false);
  });
});
