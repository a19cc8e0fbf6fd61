/**
 * `steward validate [--config FILE] PATH...` (contracts C4): directories recurse; every problem is printed as
 * `FILE:LINE:COL: CODE: message`, sorted; exit 0 when valid, 1 on problems (an unreadable PATH included), 2 on bad usage.
 * Agent registries (agents.yaml) found under the paths are validated too. Warnings go to stderr.
 */
import { stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { readdir } from 'node:fs/promises';
import { sortProblems, StewardError } from '../../errors.js';
import { compileBlueprintSet, parseAgentRegistry } from '../../engine/blueprint/index.js';
import { defaultEngineConfig, type EngineConfig } from '../../engine/config.js';
import { loadBlueprintFiles } from '../../adapters/fs/blueprint-files.js';
import { readUtf8File } from '../../adapters/fs/text.js';
import { gateHookCheckWarnings, workflowToolWarnings } from '../../engine/gate/config.js';
import type { AgentInfo } from '../../engine/types.js';
import { readSidecars, type Sidecars } from '../../adapters/fs/rule-sidecars.js';
import { ruleLockPath } from '../../engine/rules/lock.js';
import { staleLockEntries } from '../../engine/rules/load.js';
import { parse as parseYaml } from 'yaml';

/** Lock entries no rule matches any more (docs/rules.md "Lock file"): reported so a reviewer re-runs compile-rules. */
function staleRuleWarnings(files: { file: string; text: string }[], sidecars: Sidecars): StewardError[] {
  const out: StewardError[] = [];
  for (const f of files) {
    const lock = sidecars.get(f.file)?.lock;
    if (!lock) continue;
    let value: unknown;
    try {
      value = parseYaml(f.text);
    } catch {
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    for (const s of staleLockEntries(value as Record<string, unknown>, lock))
      out.push(new StewardError('STEWARD_RULES_STALE', `stale lock entry '${s.id}': ${s.why}; run \`steward compile-rules ${f.file}\``, { position: { file: ruleLockPath(f.file), line: 1, col: 1 } }));
  }
  return out;
}

export const USAGE =
  'usage: steward validate [--quiet] [--config FILE] PATH...\n  PATH: blueprint files or directories (recursive: *.yaml, *.yml, *.json; agents.yaml is checked as the agent registry)\n  --config FILE: steward.yaml whose engine settings and blueprints.workflow_limits the blueprints are checked with (default: built-in defaults)';

async function registries(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(d, e.name);
      // A symlinked registry is checked like the blueprint loader follows symlinked blueprints.
      if (/^agents\.ya?ml$/.test(e.name) && (e.isFile() || e.isSymbolicLink())) out.push(p);
      else if (e.isDirectory()) await walk(p);
    }
  };
  for (const p of paths) if ((await stat(p)).isDirectory()) await walk(p);
  else if (/^agents\.ya?ml$/.test(basename(p))) out.push(p);
  return out.sort();
}

export async function run(argv: string[]): Promise<number> {
  const paths: string[] = [];
  let quiet = false;
  let configFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    if (a === '--quiet' || a === '-q') quiet = true;
    else if (a === '--config' || a.startsWith('--config=')) {
      configFile = a === '--config' ? argv[++i] : a.slice('--config='.length);
      if (!configFile) {
        process.stderr.write(`steward validate: --config needs a value\n${USAGE}\n`);
        return 2;
      }
    } else if (a.startsWith('-')) {
      process.stderr.write(`steward validate: unknown option '${a}'\n${USAGE}\n`);
      return 2;
    } else paths.push(a);
  }
  if (paths.length === 0) {
    process.stderr.write(`steward validate: no PATH given\n${USAGE}\n`);
    return 2;
  }
  // The deployment's config, when named: named lists and patterns, and the gate's workflow limits, as `steward run` loads them.
  let config: EngineConfig = defaultEngineConfig();
  if (configFile !== undefined) {
    try {
      const { loadStewardConfig } = await import('../../config/steward-config.js');
      config = loadStewardConfig(configFile).engine;
    } catch (e) {
      process.stderr.write(`steward validate: ${e instanceof StewardError ? e.format() : (e as Error).message}\n`);
      return 2;
    }
  }
  // A path that cannot be read is a problem of that path like any other (§4.4: exit 1, one positioned
  // line each); the readable paths are still validated so every problem is reported in one run.
  const problems: StewardError[] = [];
  const readable: string[] = [];
  for (const p of paths) {
    try {
      await stat(p);
      readable.push(p);
    } catch (e) {
      const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message;
      problems.push(new StewardError('STEWARD_BLUEPRINT_SYNTAX', `cannot read: ${why}`, { position: { file: p, line: 1, col: 1 } }));
    }
  }
  const regFiles = await registries(readable);
  // Unreadable files (dangling symlinks, invalid UTF-8) are problems like the rest; the others still compile.
  const loaded = await loadBlueprintFiles(readable);
  problems.push(...loaded.errors);
  const files = loaded.files.filter((f) => !regFiles.includes(f.file));
  const side = await readSidecars(files, { registryFiles: regFiles });
  const res = compileBlueprintSet(files, { config, sidecars: side.sidecars });
  problems.push(...res.errors);
  const agents: AgentInfo[] = [];
  for (const r of regFiles) {
    const read = await readUtf8File(r, r, 'STEWARD_CONFIG').catch((e: Error) => ({ error: new StewardError('STEWARD_CONFIG', `cannot read: ${e.message}`, { position: { file: r, line: 1, col: 1 } }) }));
    if ('error' in read) problems.push(read.error);
    else {
      const parsed = parseAgentRegistry(read.text, r);
      problems.push(...parsed.errors);
      if (parsed.registry) agents.push(...parsed.registry.agents.values());
    }
  }
  // Gate spec §11: a workflow step naming a tool no registered agent lists is likely a typo (a warning: the
  // registry validated here need not be the deployment's).
  const warnings = [...side.warnings, ...staleRuleWarnings(files, side.sidecars), ...res.warnings, ...(regFiles.length > 0 && res.set ? workflowToolWarnings(res.set.blueprints, agents) : []), ...(res.set ? gateHookCheckWarnings(res.set.blueprints) : [])];
  const sorted = sortProblems(problems);
  if (sorted.length) process.stdout.write(sorted.map((e) => e.format()).join('\n') + '\n');
  if (!quiet) for (const w of warnings) process.stderr.write(`warning: ${w.format()}\n`);
  if (!quiet && !sorted.length) process.stderr.write(`${files.length} blueprint file(s)${regFiles.length ? `, ${regFiles.length} agent registry file(s)` : ''}: OK\n`);
  return sorted.length ? 1 : 0;
}
