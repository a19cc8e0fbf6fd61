import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { strictJsonError } from '../../../../src/engine/blueprint/source.js';

const parses = (t: string) => {
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
};

describe('strictJsonError', () => {
  it('points at what JSON forbids and YAML accepts', () => {
    expect(strictJsonError('{"a": [1, 2,]}')).toEqual({ message: 'trailing comma before ]', offset: 12 });
    expect(strictJsonError("{'a': 1}")).toMatchObject({ offset: 1 });
    expect(strictJsonError('{"a": 1} // c')).toMatchObject({ offset: 9 });
    expect(strictJsonError('{"a": yes}')).toMatchObject({ offset: 6 });
    expect(strictJsonError('{"a": "x\ty"}')).toMatchObject({ message: 'control character in string' });
    expect(strictJsonError('[' .repeat(600))).toMatchObject({ message: 'nested too deeply' });
    expect(strictJsonError(' {"a": [1, -2.5e3, true, null, "\\u00e9\\n"]} ')).toBeUndefined();
  });
  it('agrees with JSON.parse on valid documents and on their mutations', () => {
    fc.assert(
      fc.property(fc.json(), fc.nat(), fc.constantFrom('', ',', ']', '}', '"', ':', '\\', ' ', '0', 'x'), (doc, at, ins) => {
        expect(strictJsonError(doc)).toBeUndefined();
        const k = at % (doc.length + 1);
        const mutated = doc.slice(0, k) + ins + doc.slice(k);
        expect(strictJsonError(mutated) === undefined).toBe(parses(mutated));
      }),
      { numRuns: 2000 },
    );
  });
});
