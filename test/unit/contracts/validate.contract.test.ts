/**
 * Black-box contract of `steward validate PATH...` (contracts C4, docs/blueprints.md): exit 0 when all valid;
 * 1 otherwise with one `FILE:LINE:COL: CODE: message` line per problem — all problems, sorted (file, line,
 * col, code) — with exact positions. Two spawns: the shipped blueprints/ and one directory of broken files.
 * Expected columns are computed from the file text (indexOf), so each expectation says what it points at.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lines, steward, type Run } from './cli.js';

const tmp = mkdtempSync(join(tmpdir(), 'steward-contract-validate-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const dir = join(tmp, 'broken');

const FILES: Record<string, string> = {
  // unknown key, nested: at the key
  'a_unknown.yaml': `id: c/a@1.0
version: "1.0.0"
description: d
scoring:
  thresholds: { ok: 0.1, nudge: 0.2, escalate: 0.3, block: 0.4 }
  treshold_mode: strict
`,
  // two problems in one file: both reported (bad semver at the value, unknown top-level key)
  'b_semver.yaml': `id: c/b@1.0
version: "1.0"
description: d
colour: red
`,
  // DSL problems at their offset inside the expression; line 13 sorts after line 8 (numeric, not text)
  'c_dsl.yaml': `id: c/c@1.0
version: "1.0.0"
description: d
checks:
  - id: r1
    when: { hook: tool_call }
    rule:
      condition: "args.n <= 5 AND frobnicate(args.m)"
      on_fail: { decision: flag, reason: r }
  - id: r2
    when: { hook: tool_call }
    rule:
      condition: "args.n <= 5 AND AND args.m"
      on_fail: { decision: flag, reason: r }
`,
  'd_parent.yaml': `id: c/d@1.0
version: "1.0.0"
description: d
inherits: lib/nonexistent@1.0
`,
  // quoting: '' and \\" escapes shift the column; a plain scalar; an item of a compound condition
  'e_quotes.yaml': `id: c/e@1.0
version: "1.0.0"
description: d
checks:
  - id: r1
    when: { hook: tool_call }
    rule:
      condition: 'args.s == ''x'' AND frob(args.m)'
      on_fail: { decision: flag, reason: r }
  - id: r2
    when: { hook: tool_call }
    rule:
      condition: "args.s == \\"x\\" AND frob(args.m)"
      on_fail: { decision: flag, reason: r }
  - id: r3
    when: { hook: tool_call }
    rule:
      condition: args.n <= 5 AND frob(args.m)
      on_fail: { decision: flag, reason: r }
  - id: r4
    when: { hook: tool_call }
    rule:
      condition:
        NOT:
          all:
            - args.n <= 5
            - frob(args.m)
      on_fail: { decision: flag, reason: r }
`,
  'f_crlf.yaml': 'id: c/f@1.0\r\nversion: "1.0.0"\r\ndescription: d\r\n  \r\nbogus_key: 1\r\n',
  'g.json': `{
  "id": "c/g@1.0",
  "version": "1.0.0",
  "description": "d",
    "bogus": true
}
`,
  'h_dup.yaml': `id: c/h@1.0
version: "1.0.0"
description: d
description: e
`,
  // patterns RE2 rejects (backreference, lookaround) are load errors, not runtime surprises
  'i_regex.yaml': `id: c/i@1.0
version: "1.0.0"
description: d
tripwires:
  - id: t1
    when: { hook: output }
    condition: 'NOT matches_regex(content, "(a)\\\\1")'
    on_fail: { decision: block, reason: r }
  - id: t2
    when: { hook: output }
    condition: 'NOT matches_regex(content, "(?=a)b")'
    on_fail: { decision: block, reason: r }
checks:
  - id: m1
    when: { hook: output }
    metric: { name: m1, weight: 1, check: { type: regex, args: { pattern: "(?<=x)y" } } }
`,
  // nested directory; a misspelt required key
  'sub/j_unknown.yaml': `id: c/j@1.0
version: "1.0.0"
descripton: d
`,
  'z_valid.yaml': `id: c/z@1.0
version: "1.0.0"
description: valid
`,
};

/** 1-based line and column of `needle` (the n-th line containing it), plus `offset` characters. */
function at(file: string, needle: string, offset = 0, nth = 0): string {
  const ls = FILES[file].split(/\r?\n/);
  const hits = ls.map((l, i) => [i, l.indexOf(needle)] as const).filter(([, c]) => c >= 0);
  const [i, c] = hits[nth];
  return `${file}:${i + 1}:${c + 1 + offset}`;
}
/** Column of the first character of a quoted scalar's expression. */
const expr = (file: string, quoted: string, offset: number, nth = 0) => at(file, quoted, 1 + offset, nth);

const EXPECTED: string[] = [
  `${at('a_unknown.yaml', 'treshold_mode')}: STEWARD_BLUEPRINT_UNKNOWN_KEY`,
  `${at('b_semver.yaml', '"1.0"')}: STEWARD_BLUEPRINT_SEMVER`,
  `${at('b_semver.yaml', 'colour')}: STEWARD_BLUEPRINT_UNKNOWN_KEY`,
  `${expr('c_dsl.yaml', '"args.n <= 5 AND frob', 'args.n <= 5 AND '.length)}: STEWARD_DSL_UNKNOWN_FUNCTION`,
  `${expr('c_dsl.yaml', '"args.n <= 5 AND AND', 'args.n <= 5 AND '.length)}: STEWARD_DSL_PARSE`,
  `${at('d_parent.yaml', 'lib/nonexistent@1.0')}: STEWARD_BLUEPRINT_MISSING_PARENT`,
  // expression offset 18 ("args.s == 'x' AND "), plus 2 for the two escape characters before it
  `${expr('e_quotes.yaml', "'args.s", 18 + 2)}: STEWARD_DSL_UNKNOWN_FUNCTION`,
  `${expr('e_quotes.yaml', '"args.s', 18 + 2)}: STEWARD_DSL_UNKNOWN_FUNCTION`,
  `${at('e_quotes.yaml', 'frob(args.m)', 0, 2)}: STEWARD_DSL_UNKNOWN_FUNCTION`,
  `${at('e_quotes.yaml', 'frob(args.m)', 0, 3)}: STEWARD_DSL_UNKNOWN_FUNCTION`,
  `f_crlf.yaml:5:1: STEWARD_BLUEPRINT_UNKNOWN_KEY`,
  `${at('g.json', '"bogus"')}: STEWARD_BLUEPRINT_UNKNOWN_KEY`,
  `h_dup.yaml:4:1: STEWARD_BLUEPRINT_SYNTAX`,
  `${expr('i_regex.yaml', "'NOT matches_regex(content, \"(a)", 'NOT matches_regex(content, '.length)}: STEWARD_DSL_REGEX`,
  `${expr('i_regex.yaml', "'NOT matches_regex(content, \"(?=", 'NOT matches_regex(content, '.length)}: STEWARD_DSL_REGEX`,
  `${at('i_regex.yaml', '"(?<=x)y"')}: STEWARD_DSL_REGEX`,
  // the misspelt key leaves the required `description` missing: reported at the document (1:1) too
  `sub/j_unknown.yaml:1:1: STEWARD_BLUEPRINT_SCHEMA`,
  `${at('sub/j_unknown.yaml', 'descripton')}: STEWARD_BLUEPRINT_UNKNOWN_KEY`,
];

const LINE = /^(.+?):(\d+):(\d+): (STEWARD_[A-Z0-9_]+): (.+)$/;

describe('steward validate (contracts C4)', () => {
  let good: Run;
  let bad: Run;
  beforeAll(() => {
    for (const [name, text] of Object.entries(FILES)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    good = steward(['validate', 'blueprints']);
    bad = steward(['validate', dir]);
  }, 180_000);

  it('exit 0 and nothing on stdout for the shipped blueprints/', () => {
    expect(good.status, good.stdout + good.stderr).toBe(0);
    expect(good.stdout).toBe('');
  });

  it('exit 1 on a directory of broken files', () => {
    expect(bad.status, bad.stderr).toBe(1);
  });

  it('every stdout line is FILE:LINE:COL: CODE: message, naming a given file', () => {
    const out = lines(bad.stdout);
    expect(out.length).toBeGreaterThan(0);
    for (const l of out) {
      const m = LINE.exec(l);
      expect(m, l).not.toBeNull();
      expect(m![1].startsWith(dir + '/'), l).toBe(true);
      expect(Number(m![2])).toBeGreaterThan(0);
      expect(Number(m![3])).toBeGreaterThan(0);
    }
  });

  it('sorted by file, then line and column as numbers, then code; no duplicates', () => {
    const keys = lines(bad.stdout).map((l) => LINE.exec(l)!);
    const sorted = [...keys].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || Number(a[2]) - Number(b[2]) || Number(a[3]) - Number(b[3]) || (a[4] < b[4] ? -1 : a[4] > b[4] ? 1 : 0));
    expect(keys.map((m) => m[0])).toEqual(sorted.map((m) => m[0]));
    expect(new Set(keys.map((m) => m[0])).size).toBe(keys.length);
  });

  it('reports all problems of all files (not only the first) at the exact LINE:COL', () => {
    const got = lines(bad.stdout).map((l) => {
      const m = LINE.exec(l)!;
      return `${m[1].slice(dir.length + 1)}:${m[2]}:${m[3]}: ${m[4]}`;
    });
    expect(got).toEqual(EXPECTED);
  });

  it('a message says what is wrong (the unknown key, the version, the parent, the function)', () => {
    const out = bad.stdout;
    expect(out).toMatch(/a_unknown\.yaml:[^\n]*treshold_mode/);
    expect(out).toMatch(/b_semver\.yaml:[^\n]*SEMVER[^\n]*1\.0/);
    expect(out).toMatch(/d_parent\.yaml:[^\n]*lib\/nonexistent@1\.0/);
    expect(out).toMatch(/c_dsl\.yaml:[^\n]*frobnicate/);
  });
});
