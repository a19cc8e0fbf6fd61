/**
 * Reads blueprint files from disk for the pure engine: directories recurse (*.yaml, *.yml, *.json),
 * skipping blueprint unit tests (*.test.yaml) and the agent registry (agents.yaml).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';

const EXT = /\.(ya?ml|json)$/i;
const SKIP = /(\.test\.ya?ml|\.test\.json)$|(^|[\\/])agents\.ya?ml$/i;

export function isBlueprintFile(path: string): boolean {
  return EXT.test(path) && !SKIP.test(path);
}

async function walk(dir: string, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries) {
    if (e.name.startsWith('.') || e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) await walk(p, out);
    else if (e.isFile() && isBlueprintFile(p)) out.push(p);
  }
}

/** Lists blueprint files under each path (a file path is taken as given, whatever its name). Sorted, unique. */
export async function listBlueprintFiles(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const s = await stat(p);
    if (s.isDirectory()) await walk(p, out);
    else out.push(p);
  }
  return [...new Set(out)].sort();
}

/**
 * Reads the files; `file` in the result is relative to `base` when given (for readable error positions),
 * otherwise the path as found.
 */
export async function readBlueprintFiles(paths: string[], opts: { base?: string } = {}): Promise<{ file: string; text: string }[]> {
  const files = await listBlueprintFiles(paths);
  return Promise.all(files.map(async (f) => ({ file: opts.base ? relative(opts.base, f) : f, text: await readFile(f, 'utf8') })));
}
