// A trace nested deeper than MAX_TRACE_DEPTH is refused at decode time (STEWARD_TRACE_SCHEMA naming the path),
// with recursion bounded by the limit: 100 000 levels must not overflow the stack.
import { describe, expect, it } from 'vitest';
import { MAX_TRACE_DEPTH, TraceDecoder, tooDeep, validateTrace } from '../../../../src/adapters/kafka/serde.js';

const trace = { trace_id: 't1', agent_id: 'a1', timestamp: '2026-04-01T08:00:00Z', hook: 'tool_call', tool: 'x' };
const nested = (n: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
};

describe('trace nesting limit', () => {
  it('accepts nesting up to the limit and names the first path beyond it', () => {
    // The trace object itself is level 1, args level 2.
    expect(tooDeep({ ...trace, args: nested(MAX_TRACE_DEPTH - 2) })).toBeUndefined();
    expect(() => validateTrace({ ...trace, args: nested(MAX_TRACE_DEPTH - 2) })).not.toThrow();
    expect(tooDeep({ ...trace, args: nested(MAX_TRACE_DEPTH) })).toMatch(/^\/args(\/a)+$/);
    expect(() => validateTrace({ ...trace, context: { list: [[[nested(MAX_TRACE_DEPTH)]]] } })).toThrow(/STEWARD_TRACE_SCHEMA|nested deeper than 64 levels/);
  });

  it('the bounded check and the path walk agree at the exact limit (trace level 1, args 2, deepest value 64 / 65)', () => {
    // nested(n) is n objects: args = nested(63) puts its innermost object at level 64, nested(64) at 65.
    expect(tooDeep({ ...trace, args: nested(MAX_TRACE_DEPTH - 1) })).toBeUndefined();
    expect(tooDeep({ ...trace, args: nested(MAX_TRACE_DEPTH) })).toBe(`/args${'/a'.repeat(MAX_TRACE_DEPTH - 1)}`);
    expect(tooDeep({ ...trace, args: { x: [nested(MAX_TRACE_DEPTH - 3)] } })).toBeUndefined();
    expect(tooDeep({ ...trace, args: { x: [nested(MAX_TRACE_DEPTH - 2)] } })).toBe(`/args/x/0${'/a'.repeat(MAX_TRACE_DEPTH - 3)}`);
    // A deep branch after shallow ones (the check must not stop at the first child), and a root array.
    expect(tooDeep({ ...trace, args: { a: {}, b: [1, {}], c: nested(MAX_TRACE_DEPTH) } })).toMatch(/^\/args\/c(\/a)+$/);
    expect(tooDeep([[nested(MAX_TRACE_DEPTH - 2)]])).toBeUndefined();
    expect(tooDeep([[nested(MAX_TRACE_DEPTH - 1)]])).toBe(`/0/0${'/a'.repeat(MAX_TRACE_DEPTH - 2)}`);
    expect(tooDeep({ a: nested(3) }, 3)).toBe('/a/a/a');
  });

  it('refuses 100 000 levels of arrays and objects from JSON text without a stack overflow', async () => {
    const decoder = new TraceDecoder({ maxBytes: 10_000_000 });
    const arrays = `${JSON.stringify(trace).slice(0, -1)},"args":{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
    await expect(decoder.decode(Buffer.from(arrays))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA', message: expect.stringMatching(/at \/args\/x(\/0)+…?: nested deeper than 64 levels/) });
    const objects = `${JSON.stringify(trace).slice(0, -1)},"extra":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`;
    await expect(decoder.decode(Buffer.from(objects))).rejects.toMatchObject({ code: 'STEWARD_TRACE_SCHEMA' });
  });
});
