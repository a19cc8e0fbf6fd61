/**
 * Property: whatever an author writes, compileBlueprintSet never throws, and every error it returns is
 * positioned (file, line, col) — the contract `steward validate` relies on.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';

const config = defaultEngineConfig();

const valid = {
  id: 'p/q@1.0',
  version: '1.0.0',
  description: 'd',
  scope: { agent_tier: ['ACL-2'], tools: ['t'] },
  tripwires: [{ id: 't1', when: { hook: 'tool_call' }, condition: 'args.n < 5', on_fail: { decision: 'block', reason: 'r' } }],
  checks: [
    { id: 'r1', when: { hook: 'tool_call' }, rule: { condition: { all: ['args.n < 5', 'NOT is_external(destination)'] }, on_fail: { decision: 'flag', reason: 'r' } } },
    { id: 'm1', when: { hook: 'output' }, metric: { name: 'm', weight: 0.5, check: { type: 'regex', args: { pattern: 'x+' } } } },
  ],
  ctq: { profile: 'default-general', metrics: { a: { weight: 0.2, scorer: 'llm-judge' } }, thresholds: { ok: 0.9, nudge: 0.8, flag: 0.6, block: 0.4 } },
  trust_debt: { accumulation: { block: 0.2 }, thresholds: { restricted_mode: 0.6 } },
  scoring: { thresholds: { ok: 0.2, nudge: 0.3, escalate: 0.4, block: 0.5 } },
  governance: { fallback_on_timeout: 'deny' },
};

type Json = unknown;
const junk: fc.Arbitrary<Json> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ min: -2, max: 2, noNaN: true }),
  fc.string({ maxLength: 8 }),
  fc.constantFrom('halt', 'ACL-9', 'args.n <', 'all', 'NOT', '1.0', '@latest', 'x-ext'),
  fc.constant([]),
  fc.constant({}),
  fc.constant([{}]),
);

/** Replaces, deletes or adds a value at a random path of the valid blueprint. */
function mutate(base: Json, path: number[], value: Json, op: number): Json {
  if (path.length === 0 || base === null || typeof base !== 'object') return value;
  const clone: any = Array.isArray(base) ? [...base] : { ...(base as object) };
  const keys = Object.keys(clone);
  if (keys.length === 0) return clone;
  const k = keys[path[0] % keys.length];
  if (path.length === 1 && op === 1) delete clone[k];
  else if (path.length === 1 && op === 2 && !Array.isArray(clone)) clone[`${k}_x`] = value;
  else clone[k] = mutate(clone[k], path.slice(1), value, op);
  return clone;
}

describe('compileBlueprintSet robustness', () => {
  it('the unmutated blueprint is valid', () => {
    expect(compileBlueprintSet([{ file: 'a.yaml', text: stringify(valid) }], { config }).errors).toEqual([]);
  });

  it('never throws; every error has file, line and col', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(20), { minLength: 1, maxLength: 7 }), junk, fc.nat(2), fc.boolean(), (path, value, op, asJson) => {
        const doc = mutate(valid, path, value, op);
        const text = asJson ? JSON.stringify(doc, null, 2) : stringify(doc);
        const res = compileBlueprintSet([{ file: asJson ? 'a.json' : 'a.yaml', text }], { config });
        for (const e of res.errors) {
          expect(e.position?.file).toBeDefined();
          expect(e.position!.line).toBeGreaterThanOrEqual(1);
          expect(e.position!.col).toBeGreaterThanOrEqual(1);
        }
        expect(res.set === undefined).toBe(res.errors.length > 0);
      }),
      { numRuns: 1500, seed: 42 },
    );
  });

  it('arbitrary text never throws', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        compileBlueprintSet([{ file: 'a.yaml', text }], { config });
      }),
      { numRuns: 300, seed: 7 },
    );
  });
});
