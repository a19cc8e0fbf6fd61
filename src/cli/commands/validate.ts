/**
 * `steward validate PATH...` (DESIGN §4.4): directories recurse; every problem is printed as
 * `FILE:LINE:COL: CODE: message`, sorted; exit 0 when valid, 1 on problems, 2 on bad arguments.
 * Agent registries (agents.yaml) found under the paths are validated too. Warnings go to stderr.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { readdir } from 'node:fs/promises';
import { sortProblems, type StewardError } from '../../errors.js';
import { compileBlueprintSet, parseAgentRegistry } from '../../engine/blueprint/index.js';
import { defaultEngineConfig } from '../../engine/config.js';
import { readBlueprintFiles } from '../../adapters/fs/blueprint-files.js';

const USAGE = 'usage: steward validate [--quiet] PATH...\n  PATH: blueprint files or directories (recursive: *.yaml, *.yml, *.json; agents.yaml is checked as the agent registry)';

async function registries(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (/^agents\.ya?ml$/.test(e.name)) out.push(p);
    }
  };
  for (const p of paths) if ((await stat(p)).isDirectory()) await walk(p);
  else if (/^agents\.ya?ml$/.test(basename(p))) out.push(p);
  return out.sort();
}

export async function run(argv: string[]): Promise<number> {
  const paths: string[] = [];
  let quiet = false;
  for (const a of argv) {
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    if (a === '--quiet' || a === '-q') quiet = true;
    else if (a.startsWith('-')) {
      process.stderr.write(`steward validate: unknown option '${a}'\n${USAGE}\n`);
      return 2;
    } else paths.push(a);
  }
  if (paths.length === 0) {
    process.stderr.write(`steward validate: no PATH given\n${USAGE}\n`);
    return 2;
  }
  for (const p of paths) {
    try {
      await stat(p);
    } catch {
      process.stderr.write(`steward validate: no such file or directory: ${p}\n`);
      return 2;
    }
  }
  const regFiles = await registries(paths);
  const files = (await readBlueprintFiles(paths)).filter((f) => !regFiles.includes(f.file));
  const res = compileBlueprintSet(files, { config: defaultEngineConfig() });
  const problems: StewardError[] = [...res.errors];
  for (const r of regFiles) problems.push(...parseAgentRegistry(await readFile(r, 'utf8'), r).errors);
  const sorted = sortProblems(problems);
  if (sorted.length) process.stdout.write(sorted.map((e) => e.format()).join('\n') + '\n');
  if (!quiet) for (const w of res.warnings) process.stderr.write(`warning: ${w.format()}\n`);
  if (!quiet && !sorted.length) process.stderr.write(`${files.length} blueprint file(s)${regFiles.length ? `, ${regFiles.length} agent registry file(s)` : ''}: OK\n`);
  return sorted.length ? 1 : 0;
}
