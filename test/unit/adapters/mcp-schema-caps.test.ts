// Review finding 8: an imported MCP input schema is bounded in depth, key count and bytes. A 20 000-deep schema
// used to pass the top-level check and crash compile-rules with RangeError in JSON.stringify.
import { describe, expect, it } from 'vitest';
import { inputSchemaProblem, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_KEYS } from '../../../src/adapters/mcp/tool-import.js';

/** { type: object, properties: { a: { type: object, properties: { a: ... } } } }, `levels` property levels. */
function nested(levels: number): Record<string, unknown> {
  let s: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { type: 'object', properties: { a: s } };
  return s;
}

describe('inputSchemaProblem size caps', () => {
  it('a 20 000-deep schema is refused without throwing', () => {
    const deep = nested(20_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError); // what crashed the import before
    expect(inputSchemaProblem('t', deep)).toMatch(/^tool 't': inputSchema nested deeper than 32 levels$/);
  });

  it('depth: a schema just inside the cap is accepted, one level more is refused', () => {
    // each property level adds two (the schema and its properties map); the leaf is one more
    const ok = nested(Math.floor((MAX_SCHEMA_DEPTH - 1) / 2));
    expect(inputSchemaProblem('t', ok)).toBeUndefined();
    expect(inputSchemaProblem('t', nested(Math.floor((MAX_SCHEMA_DEPTH - 1) / 2) + 1))).toMatch(/deeper than/);
  });

  it('key count and bytes', () => {
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: MAX_SCHEMA_KEYS }, (_, i) => [`p${i}`, { type: 'string' }])) };
    expect(inputSchemaProblem('t', wide)).toMatch(/more than 5000 keys and items/);
    const long = { type: 'object', properties: { p: { type: 'string', description: 'x'.repeat(MAX_SCHEMA_BYTES) } } };
    expect(inputSchemaProblem('t', long)).toMatch(/^tool 't': inputSchema is \d+ bytes as JSON \(at most 262144\)$/);
    const items = { type: 'object', properties: { p: { enum: Array.from({ length: MAX_SCHEMA_KEYS + 1 }, (_, i) => i) } } };
    expect(inputSchemaProblem('t', items)).toMatch(/more than 5000 keys and items/);
    expect(inputSchemaProblem('t', { type: 'object', properties: { amount: { type: 'number' } } })).toBeUndefined();
  });
});
