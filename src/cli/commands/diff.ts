/**
 * `steward diff OLD NEW [--blueprints DIR]` (ACGP-1004 §13.3): compares the resolved forms of two
 * blueprint files, prints each change with its class, the minimum version bump and the actual one.
 * Exit 0 when NEW's version bump is large enough, 1 when it is too small (or a downgrade), 2 on bad
 * arguments or when a file does not compile. Parents resolve from --blueprints DIR (and the built-in baseline).
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { compileBlueprintSet, diffBlueprints, parseSource, splitId } from '../../engine/blueprint/index.js';
import { defaultEngineConfig } from '../../engine/config.js';
import type { CompiledBlueprint } from '../../engine/types.js';
import { readBlueprintFiles } from '../../adapters/fs/blueprint-files.js';
import { offlineDiffs, summarizeDiffs } from '../diff-traces.js';
import { formatSummary } from './shadow.js';

export const USAGE = [
  'usage: steward diff [--blueprints DIR] OLD NEW',
  '       steward diff --traces FILE [--agents FILE] [--config FILE] [--json] OLD_SET NEW_SET   (docs/rollout.md: offline twin of shadow evaluation)',
].join('\n');

type Loaded = { bp?: CompiledBlueprint; problems: string[] };

function idOf(file: string, text: string): string | undefined {
  const { doc } = parseSource(file, text);
  const v = doc?.value as { id?: unknown; version?: unknown } | undefined;
  return typeof v?.id === 'string' && typeof v.version === 'string' ? `${splitId(v.id).name}@${v.version}` : undefined;
}

async function load(path: string, context: { file: string; text: string }[]): Promise<Loaded> {
  const text = await readFile(path, 'utf8');
  const key = idOf(path, text);
  // The target replaces any context file with the same path or the same id+version.
  const ctx = context.filter((c) => resolve(c.file) !== resolve(path) && (key === undefined || idOf(c.file, c.text) !== key));
  const res = compileBlueprintSet([...ctx, { file: path, text }], { config: defaultEngineConfig() });
  if (!res.set) return { problems: res.errors.map((e) => e.format()) };
  return { bp: res.set.blueprints.find((b) => b.file === path), problems: [] };
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--traces')) return runTraces(argv);
  const pos: string[] = [];
  let dir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    if (a === '--blueprints') {
      dir = argv[++i];
      if (!dir) {
        process.stderr.write(`steward diff: --blueprints needs a directory\n${USAGE}\n`);
        return 2;
      }
    } else if (a.startsWith('-')) {
      process.stderr.write(`steward diff: unknown option '${a}'\n${USAGE}\n`);
      return 2;
    } else pos.push(a);
  }
  if (pos.length !== 2) {
    process.stderr.write(`steward diff: expected OLD and NEW\n${USAGE}\n`);
    return 2;
  }
  let context: { file: string; text: string }[] = [];
  let a: Loaded;
  let b: Loaded;
  try {
    if (dir) context = await readBlueprintFiles([dir]);
    a = await load(pos[0], context);
    b = await load(pos[1], context);
  } catch (e) {
    process.stderr.write(`steward diff: ${(e as Error).message}\n`);
    return 2;
  }
  const problems = [...a.problems, ...b.problems];
  if (problems.length || !a.bp || !b.bp) {
    process.stderr.write(problems.join('\n') + (problems.length ? '\n' : '') + 'steward diff: both files must be valid blueprints\n');
    return 2;
  }
  const d = diffBlueprints(a.bp.resolved, b.bp.resolved);
  const lines = d.changes.map((c) => `${c.class}: ${c.path}: ${c.message}`);
  if (!lines.length) lines.push('no changes');
  lines.push(`minimum bump: ${d.required}`);
  lines.push(`actual bump: ${d.actual} (${a.bp.version} -> ${b.bp.version})`);
  lines.push(d.ok ? 'OK' : `version bump too small: ${b.bp.id} needs a ${d.required} bump from ${a.bp.version}`);
  process.stdout.write(lines.join('\n') + '\n');
  return d.ok ? 0 : 1;
}

/** `--traces FILE OLD_SET NEW_SET`: both sets decide every recorded trace; the shadow diff of each (docs/rollout.md). */
async function runTraces(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { traces: { type: 'string' }, agents: { type: 'string' }, config: { type: 'string' }, json: { type: 'boolean' } } });
  if (!v.traces || positionals.length !== 2) {
    process.stderr.write(`steward diff: --traces FILE needs OLD_SET and NEW_SET (blueprint directories or files)\n${USAGE}\n`);
    return 2;
  }
  const diffs = await offlineDiffs({ traces: v.traces, active: positionals[0], candidate: positionals[1], agents: v.agents, config: v.config });
  const summary = summarizeDiffs(diffs);
  if (v.json) for (const d of diffs) process.stdout.write(JSON.stringify(d) + '\n');
  else process.stdout.write(formatSummary(summary, `diff ${positionals[0]} → ${positionals[1]}`) + '\n');
  return 0;
}
