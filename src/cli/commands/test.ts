/**
 * `steward test DIR [--agents FILE] [--config FILE] [--sources FILE] [-v]`: runs every `*.test.yaml`
 * under DIR against the blueprints in DIR (format: src/cli/eval-blueprint-tests.ts).
 * Exit 0 all pass, 1 any failure, 2 bad arguments, invalid blueprints or invalid test files.
 */
import { readFile } from 'node:fs/promises';
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { isStewardError } from '../../errors.js';
import { SetupError, setupOffline } from '../eval-setup.js';
import { parseTestFile, runBlueprintTest, type TestFile } from '../eval-blueprint-tests.js';

export const USAGE = 'usage: steward test DIR [--agents FILE] [--config FILE] [--sources FILE] [--verbose]';

async function testFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (/\.test\.ya?ml$/.test(e.name)) out.push(p);
    }
  };
  await walk(dir);
  return out.sort();
}

export async function run(argv: string[]): Promise<number> {
  let dir: string | undefined;
  const opt: { agents?: string; config?: string; sources?: string } = {};
  let verbose = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    if (a === '--agents' || a === '--config' || a === '--sources') {
      const v = argv[++i];
      if (v === undefined) return usage(`${a} needs a value`);
      opt[a.slice(2) as 'agents' | 'config' | 'sources'] = v;
    } else if (a === '-v' || a === '--verbose') verbose = true;
    else if (a.startsWith('-')) return usage(`unknown option '${a}'`);
    else if (dir) return usage('only one DIR may be given');
    else dir = a;
  }
  if (!dir) return usage('DIR is required');
  try {
    if (!(await stat(dir)).isDirectory()) return usage(`${dir} is not a directory`);
  } catch {
    return usage(`no such directory: ${dir}`);
  }
  const err = (l: string) => process.stderr.write(l + '\n');
  let setup;
  try {
    setup = await setupOffline({ blueprints: dir, ...opt, llm: null, ephemeralKeyOk: true, warn: err });
  } catch (e) {
    if (e instanceof SetupError) {
      err(`steward test: ${e.message}`);
      for (const p of e.problems) err(p);
      return 2;
    }
    throw e;
  }
  const files = await testFiles(dir);
  if (files.length === 0) {
    err(`steward test: no *.test.yaml files under ${dir}`);
    return 2;
  }
  const parsed: { file: string; tf: TestFile }[] = [];
  for (const f of files) {
    try {
      parsed.push({ file: relative(process.cwd(), f) || f, tf: parseTestFile(await readFile(f, 'utf8'), relative(process.cwd(), f) || f) });
    } catch (e) {
      err(`steward test: ${isStewardError(e) ? e.message : String(e)}`);
      return 2;
    }
  }
  let pass = 0;
  let fail = 0;
  let idx = 0;
  for (const { file, tf } of parsed) {
    for (const t of tf.tests) {
      idx++;
      let problems: string[];
      try {
        problems = await runBlueprintTest(t, idx, (llm, blueprints) => setup.makeEngine({ llm, blueprints, onWarning: () => {} }), setup.set);
      } catch (e) {
        problems = [`error: ${isStewardError(e) ? e.format() : (e as Error).message}`];
      }
      if (problems.length === 0) {
        pass++;
        if (verbose) process.stdout.write(`PASS ${file}: ${t.name}\n`);
      } else {
        fail++;
        process.stdout.write(`FAIL ${file}: ${t.name}\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
      }
    }
  }
  process.stdout.write(`${fail === 0 ? 'PASS' : 'FAIL'}: ${pass}/${pass + fail} test(s) passed in ${parsed.length} file(s)\n`);
  return fail === 0 ? 0 : 1;
}

function usage(msg: string): number {
  process.stderr.write(`steward test: ${msg}\n${USAGE}\n`);
  return 2;
}
