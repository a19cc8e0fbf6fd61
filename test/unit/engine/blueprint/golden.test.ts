/**
 * Data-driven blueprint cases: test/golden/blueprint/<area>/*.yaml. Each case gives files (name → text),
 * optionally an agent registry and options, and the expected outcome:
 *   errors: exact list of {code, file, line, col, message?(substring)} (sorted as the engine sorts);
 *   warnings: entries that must be present; resolve: ref → {key, chain, checks, tripwires, scoring, ...};
 *   select: agent id → blueprint key (`name@version`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compileBlueprintSet, parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { splitId } from '../../../../src/engine/blueprint/versions.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import type { StewardError } from '../../../../src/errors.js';
import type { Trace } from '../../../../src/engine/types.js';

interface ExpectedProblem {
  code: string;
  file: string;
  line: number;
  col: number;
  message?: string;
}

interface Case {
  description: string;
  files: Record<string, string>;
  includeBuiltinBaseline?: boolean;
  registry?: string;
  expect: {
    errors?: ExpectedProblem[];
    warnings?: ExpectedProblem[];
    resolve?: Record<string, null | { key: string; chain?: string[]; checks?: string[]; tripwires?: string[]; rules?: string[]; scoring?: Record<string, number>; scope?: unknown; ctq?: unknown }>;
    select?: Record<string, string>;
  };
}

const root = join(import.meta.dirname, '../../../golden/blueprint');
const areas = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory() && readdirSync(join(root, d.name)).some((n) => n.endsWith('.yaml')));
const key = (bp: { id: string; version: string }): string => `${splitId(bp.id).name}@${bp.version}`;
const shape = (e: StewardError): ExpectedProblem => ({ code: e.code, file: e.position?.file ?? '', line: e.position?.line ?? 0, col: e.position?.col ?? 0 });
const trace: Trace = { trace_id: 't', agent_id: 'x', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call' };

for (const area of areas) {
  describe(`golden blueprint/${area.name}`, () => {
    for (const f of readdirSync(join(root, area.name)).filter((n) => n.endsWith('.yaml')).sort()) {
      const c = parse(readFileSync(join(root, area.name, f), 'utf8')) as Case;
      it(`${f}: ${c.description}`, () => {
        const files = Object.entries(c.files).map(([file, text]) => ({ file, text }));
        const res = compileBlueprintSet(files, { config: defaultEngineConfig(), includeBuiltinBaseline: c.includeBuiltinBaseline });
        const want = c.expect.errors ?? [];
        expect(res.errors.map(shape)).toEqual(want.map(({ message: _m, ...rest }) => rest));
        want.forEach((w, i) => {
          if (w.message) expect(res.errors[i].message).toContain(w.message);
        });
        for (const w of c.expect.warnings ?? []) {
          const hit = res.warnings.find((x) => x.code === w.code && x.position?.line === w.line && x.position?.col === w.col && x.position?.file === w.file);
          expect(hit, `warning ${JSON.stringify(w)} in ${JSON.stringify(res.warnings.map(shape))}`).toBeDefined();
          if (w.message) expect(hit!.message).toContain(w.message);
        }
        if (want.length) {
          expect(res.set).toBeUndefined();
          return;
        }
        const set = res.set!;
        expect(set).toBeDefined();
        for (const [ref, exp] of Object.entries(c.expect.resolve ?? {})) {
          const bp = set.get(ref);
          if (exp === null) {
            expect(bp, ref).toBeUndefined();
            continue;
          }
          expect(bp, ref).toBeDefined();
          expect(key(bp!)).toBe(exp.key);
          if (exp.chain) expect(bp!.chain).toEqual(exp.chain);
          if (exp.checks) expect([...bp!.rules.map((r) => r.id), ...bp!.metrics.filter((m) => !m.id.startsWith('ctq.')).map((m) => m.id)].sort()).toEqual([...exp.checks].sort());
          if (exp.rules) expect(bp!.rules.map((r) => r.id)).toEqual(exp.rules);
          if (exp.tripwires) expect(bp!.tripwires.map((t) => t.id)).toEqual(exp.tripwires);
          if (exp.scoring) expect(bp!.scoring).toEqual(exp.scoring);
          if (exp.scope) expect(bp!.scope).toEqual(exp.scope);
          if (exp.ctq) expect(bp!.ctq).toEqual(exp.ctq);
        }
        if (c.expect.select) {
          const reg = parseAgentRegistry(c.registry ?? 'agents: []', 'agents.yaml');
          expect(reg.errors).toEqual([]);
          for (const [agent, want] of Object.entries(c.expect.select)) expect(key(set.select(reg.registry!.lookup(agent), trace)), agent).toBe(want);
        }
      });
    }
  });
}
