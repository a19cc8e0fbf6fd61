/**
 * SourcePosition ranges: where the loader knows the node's range, a problem's position has an end
 * (`endLine`/`endCol`, 1-based, exclusive) so an editor can underline the offending text. The
 * `FILE:LINE:COL: CODE: message` format of `steward validate` (contracts C4) is unchanged.
 */
import { describe, expect, it } from 'vitest';
import { type SourcePosition } from '../../../../src/errors.js';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { parseAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import { parseSource } from '../../../../src/engine/blueprint/source.js';
import { parseConfigText } from '../../../../src/config/steward-config.js';
import { StewardAggregateError } from '../../../../src/errors.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';

/** The text a position's range covers: [line:col, endLine:endCol). */
function covered(text: string, p: SourcePosition): string {
  const lines = text.split('\n');
  const offset = (line: number, col: number): number => lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + col - 1;
  expect(p.line).toBeGreaterThanOrEqual(1);
  expect(p.endLine).toBeDefined();
  expect(p.endCol).toBeDefined();
  return text.slice(offset(p.line!, p.col!), offset(p.endLine!, p.endCol!));
}

const blueprint = (extra: string): string => `id: acme/range@1.0
version: "1.0.0"
description: ranges
checks:
  - id: r
    when: { hook: output }
    rule: { condition: "true", on_fail: { decision: flag, reason: never } }
scoring: { thresholds: { ok: 0.2, nudge: 0.4, escalate: 0.6, block: 0.8 } }
${extra}`;

describe('source positions have an end', () => {
  const text = `a: plain value   # a comment
b: "quoted \\"x\\""
c: |
  line one
  line two

d: [1, 2, 3]
e:
  f: 1
`;
  const { doc, errors } = parseSource('x.yaml', text);

  it('a plain scalar: the value, not the comment after it', () => {
    expect(errors).toEqual([]);
    const p = doc!.pos(['a']);
    expect(p).toMatchObject({ file: 'x.yaml', line: 1, col: 4, endLine: 1, endCol: 15, path: '$.a' });
    expect(covered(text, p)).toBe('plain value');
  });

  it('a quoted scalar with its quotes; a flow sequence with its brackets; a key alone', () => {
    expect(covered(text, doc!.pos(['b']))).toBe('"quoted \\"x\\""');
    expect(covered(text, doc!.pos(['d']))).toBe('[1, 2, 3]');
    expect(covered(text, doc!.pos(['d', 1]))).toBe('2');
    expect(covered(text, doc!.pos(['e'], { key: true }))).toBe('e');
  });

  it('a block scalar ends on its last content line, not on the blank line after it', () => {
    const p = doc!.pos(['c']);
    expect(p).toMatchObject({ line: 3, endLine: 5, endCol: 11 });
    expect(covered(text, p)).toBe('|\n  line one\n  line two');
  });

  it('a block mapping covers its entries', () => {
    expect(covered(text, doc!.pos(['e']))).toBe('f: 1');
  });

  it('inside a DSL expression: from the offending character to the end of the expression (quotes left out)', () => {
    const src = 'k: "a AND b"\n';
    const p = parseSource('y.yaml', src).doc!.posInScalar(['k'], 6);
    expect(p).toMatchObject({ line: 1, col: 11, offset: 6, endLine: 1, endCol: 12 });
    expect(covered(src, p)).toBe('b');
    const block = 'k: |\n  a AND\n  nosuch(x)\n\nz: 1\n';
    expect(covered(block, parseSource('z.yaml', block).doc!.posInScalar(['k'], 6))).toBe('nosuch(x)');
  });

  it('syntax errors have a range that starts at the error', () => {
    const bad = parseSource('bad.yaml', 'a: [1, 2\nb: 3\n');
    expect(bad.errors.length).toBeGreaterThan(0);
    for (const e of bad.errors) {
      const p = e.position!;
      if (p.endLine !== undefined) expect(p.endLine * 10_000 + p.endCol!).toBeGreaterThan(p.line! * 10_000 + p.col!);
    }
    const json = parseSource('bad.json', '{"a": 1,}');
    expect(json.errors[0]!.position).toMatchObject({ line: 1, col: 9, endLine: 1, endCol: 10 });
  });
});

describe('blueprint and registry problems carry the range of the offending value', () => {
  it('a schema problem underlines the bad value; the validate line format is unchanged', () => {
    const text = blueprint(`tripwires:
  - id: t
    condition: "true"
    on_fail: { decision: explode, reason: x }
`);
    const res = compileBlueprintSet([{ file: 'bp.yaml', text }], { config: defaultEngineConfig() });
    const e = res.errors.find((x) => x.position?.path?.includes('decision'));
    expect(e, res.errors.map((x) => x.format()).join('\n')).toBeDefined();
    expect(covered(text, e!.position!)).toBe('explode');
    expect(e!.format()).toMatch(/^bp\.yaml:12:26: STEWARD_[A-Z_]+: /);
  });

  it('a DSL problem in a condition starts at the problem and ends with the expression', () => {
    const text = blueprint(`tripwires:
  - id: t
    condition: "tool == 'x' AND nosuchfn(args)"
    on_fail: { decision: block, reason: x }
`);
    const res = compileBlueprintSet([{ file: 'bp.yaml', text }], { config: defaultEngineConfig() });
    const e = res.errors.find((x) => x.position?.path === '$.tripwires[0].condition');
    expect(e, res.errors.map((x) => x.format()).join('\n')).toBeDefined();
    expect(covered(text, e!.position!)).toBe('nosuchfn(args)');
  });

  it('steward.yaml: a bad value and an unknown key are underlined', () => {
    const text = 'kafka:\n  client_idd: x\nredis:\n  url: 42\n';
    let err: unknown;
    try {
      parseConfigText(text, 'steward.yaml');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StewardAggregateError);
    const errs = (err as StewardAggregateError).errors;
    const at = (path: string) => errs.find((e) => e.position?.path === path)!.position!;
    expect(covered(text, at('$.kafka.client_idd'))).toBe('client_idd');
    expect(covered(text, at('$.redis.url'))).toBe('42');
  });

  it('agents.yaml: a bad tier underlines the tier', () => {
    const text = 'agents:\n  - id: a-1\n    tier: ACL-9   # no such tier\n';
    const { errors } = parseAgentRegistry(text, 'agents.yaml');
    expect(errors).toHaveLength(1);
    expect(covered(text, errors[0]!.position!)).toBe('ACL-9');
    expect(errors[0]!.format()).toMatch(/^agents\.yaml:3:11: STEWARD_BLUEPRINT_TIER: /);
  });
});
