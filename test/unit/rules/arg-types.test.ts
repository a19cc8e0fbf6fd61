import { describe, expect, it } from 'vitest';
import { compileBlueprintSet } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { checkArgTypes } from '../../../src/engine/rules/arg-types.js';

const schema = {
  type: 'object',
  properties: {
    amount: { type: 'number' },
    currency: { type: 'string', enum: ['USD', 'EUR'] },
    reason: { type: 'string' },
    customer: { type: 'object', properties: { id: { type: 'string' }, vip: { type: 'boolean' } } },
    items: { type: 'array', items: { type: 'object', properties: { sku: { type: 'string' } } } },
    meta: { type: 'object', additionalProperties: true },
  },
};
const tools = new Map([['process_refund', schema]]);

describe('args.* type check against an imported tool schema (gate spec §10)', () => {
  it('accepts well-typed conditions, nested paths, .length, open objects and other roots', () => {
    for (const c of [
      'args.amount <= 500',
      'args.currency == "USD" AND args.customer.vip == true',
      'args.items[0].sku contains "X" OR args.reason.length < 200',
      'args.meta.anything == 3',
      'tool == "process_refund" AND content contains "x"',
      'exists(args.amount)',
      { all: ['args.amount > 0', { NOT: 'args.reason matches "(?i)fraud"' }] },
    ])
      expect(checkArgTypes(c, schema, 'process_refund'), JSON.stringify(c)).toEqual([]);
  });

  it('a typo is an unknown input at the field, a wrong literal type a problem at the operator', () => {
    expect(checkArgTypes('args.amout > 500', schema, 'process_refund')).toEqual([
      { code: 'STEWARD_DSL_TYPE', message: "args.amout: tool 'process_refund' has no input 'amout' (its inputs: amount, currency, reason, customer, items, meta)", path: '', offset: 0 },
    ]);
    const p = checkArgTypes('tool == "x" OR args.amount == "500"', schema, 'process_refund');
    expect(p).toHaveLength(1);
    expect(p[0]).toMatchObject({ offset: 27, message: expect.stringMatching(/args\.amount \(number in tool 'process_refund''s schema\) is compared with a string by ==/) });
    expect(checkArgTypes('args.customer.nmae == "a"', schema, 'process_refund')[0]!.message).toMatch(/args\.customer\.nmae: tool 'process_refund' has no input 'nmae'/);
    expect(checkArgTypes('args.reason > 5', schema, 'process_refund')[0]!.message).toMatch(/string .* compared with a number by >/);
    expect(checkArgTypes('args.currency == "GBP"', schema, 'process_refund')[0]!.message).toMatch(/none of its values \("USD", "EUR"\)/);
    expect(checkArgTypes('args.amount matches "1"', schema, 'process_refund')[0]!.message).toMatch(/not a string/);
    expect(checkArgTypes({ any: ['args.amount > 1', 'args.curency == "USD"'] }, schema, 'process_refund')[0]).toMatchObject({ path: 'any[1]', offset: 0 });
  });

  it('in a blueprint: checks, tripwires, guardrails with when.tool and requires_approval are checked, with FILE:LINE:COL', () => {
    const text = `id: pay@1.0
version: "1.0.0"
description: t
checks:
  - id: cap
    when: { tool: process_refund }
    rule: { condition: "args.amout <= 500", on_fail: { decision: block, reason: cap } }
tripwires:
  - id: tw
    when: { tool: process_refund }
    condition: 'args.amount != "0"'
    on_fail: { decision: halt, reason: zero }
tools:
  - id: process_refund
    requires_approval: "args.currency == 5"
`;
    const r = compileBlueprintSet([{ file: 'pay.yaml', text }], { config: defaultEngineConfig(), sidecars: new Map([['pay.yaml', { tools }]]) });
    expect(r.errors.map((e) => e.format())).toEqual([
      expect.stringMatching(/^pay\.yaml:7:25: STEWARD_DSL_TYPE: args\.amout: tool 'process_refund' has no input 'amout'/),
      expect.stringMatching(/^pay\.yaml:11:29: STEWARD_DSL_TYPE: args\.amount \(number/),
      expect.stringMatching(/^pay\.yaml:15:39: STEWARD_DSL_TYPE: args\.currency \(string/),
    ]);
    // without an import nothing is type-checked (the DSL is untyped over trace fields)
    expect(compileBlueprintSet([{ file: 'pay.yaml', text }], { config: defaultEngineConfig() }).errors).toEqual([]);
  });
});
