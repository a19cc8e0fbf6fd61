/**
 * Reads blueprint files from disk for the pure engine: directories recurse (*.yaml, *.yml, *.json),
 * skipping blueprint unit tests (*.test.yaml), the agent registry (agents.yaml), ACM verification sheets
 * (*.verify.yaml), ACM options (acm.yaml) and the approver registry (approvers.yaml, docs/approvals.md) that
 * live beside them (docs/acm.md).
 *
 * Symlinks are followed, files and directories alike: Kubernetes ConfigMap mounts consist of nothing else
 * (`foo.yaml -> ..data/foo.yaml`, `..data -> ..2024_xx`), and ignoring them loaded zero blueprints, so the
 * engine fell back to the baseline without a word (a policy bypass). Dot-names stay skipped, which keeps
 * ConfigMap's `..data`/`..2024_xx` from being loaded a second time. A symlink that leads nowhere is an
 * error, never a silent skip, for the same reason.
 */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { StewardAggregateError, StewardError } from '../../errors.js';
import { decodeUtf8 } from './text.js';

const EXT = /\.(ya?ml|json)$/i;
const SKIP = /(\.test\.ya?ml|\.test\.json|\.verify\.ya?ml)$|(^|[\\/])(agents|acm|approvers)\.ya?ml$/i;

export function isBlueprintFile(path: string): boolean {
  return EXT.test(path) && !SKIP.test(path);
}

/** Blueprints and the run-governance files beside them (verification sheets, acm.yaml): what a replay bundle's policy holds. */
export function isPolicyFile(path: string): boolean {
  return EXT.test(path) && !/(\.test\.ya?ml|\.test\.json)$|(^|[\\/])agents\.ya?ml$/i.test(path);
}

export interface BlueprintFileList {
  /** Sorted; one path per real file (a file reachable as a symlink and as itself is listed once). */
  files: string[];
  /** Dangling or looping symlinks, unreadable directories: positioned at the offending path. */
  errors: StewardError[];
  /** Real paths of the walked directories and of the listed files' directories (what a watcher must watch when symlinks lead out of the tree). */
  realDirs: string[];
}

const cannotRead = (path: string, why: string) => new StewardError('STEWARD_BLUEPRINT_SYNTAX', `cannot read: ${why}`, { position: { file: path, line: 1, col: 1 } });

function why(e: unknown, link: boolean): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (link && code === 'ENOENT') return 'dangling symlink (its target does not exist)';
  if (code === 'ELOOP') return 'symlink loop';
  if (code === 'ENOENT') return 'no such file or directory';
  return (e as Error).message;
}

interface Walk {
  /** real path → first path found for it (walk order is sorted, so "first" is deterministic) */
  files: Map<string, string>;
  /** real paths of directories already walked: stops symlink loops (`sub/up -> ..`) and aliases (two links to one dir) */
  dirs: Set<string>;
  fileDirs: Set<string>;
  errors: StewardError[];
}

async function addFile(p: string, w: Walk): Promise<void> {
  const real = await realpath(p);
  if (!w.files.has(real)) w.files.set(real, p);
  w.fileDirs.add(dirname(real));
}

async function walk(dir: string, w: Walk, accept: (path: string) => boolean = isBlueprintFile): Promise<void> {
  const real = await realpath(dir);
  if (w.dirs.has(real)) return;
  w.dirs.add(real);
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    w.errors.push(cannotRead(dir, why(e, false)));
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith('.') || e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    let isDir = e.isDirectory();
    let isFile = e.isFile();
    if (e.isSymbolicLink()) {
      let s: Stats;
      try {
        s = await stat(p); // follows the whole chain
      } catch (err) {
        w.errors.push(cannotRead(p, why(err, true)));
        continue;
      }
      isDir = s.isDirectory();
      isFile = s.isFile();
    }
    try {
      if (isDir) await walk(p, w, accept);
      else if (isFile && accept(p)) await addFile(p, w);
    } catch (err) {
      // Removed or replaced between readdir and here (e.g. a ConfigMap update): report, the caller retries.
      w.errors.push(cannotRead(p, why(err, false)));
    }
  }
}

/**
 * Lists blueprint files under each path (a file path is taken as given, whatever its name), collecting
 * problems instead of throwing so callers can report them with the blueprints' own errors.
 */
export async function findBlueprintFiles(paths: string[], accept: (path: string) => boolean = isBlueprintFile): Promise<BlueprintFileList> {
  const w: Walk = { files: new Map(), dirs: new Set(), fileDirs: new Set(), errors: [] };
  for (const p of paths) {
    let s: Stats;
    try {
      s = await stat(p);
    } catch (e) {
      w.errors.push(cannotRead(p, why(e, true)));
      continue;
    }
    try {
      if (s.isDirectory()) await walk(p, w, accept);
      else await addFile(p, w);
    } catch (e) {
      w.errors.push(cannotRead(p, why(e, false)));
    }
  }
  return { files: [...w.files.values()].sort(), errors: w.errors, realDirs: [...new Set([...w.dirs, ...w.fileDirs])].sort() };
}

/** Lists blueprint files under each path. Sorted, unique by real path. Throws (StewardAggregateError) on dangling symlinks etc. */
export async function listBlueprintFiles(paths: string[]): Promise<string[]> {
  const { files, errors } = await findBlueprintFiles(paths);
  if (errors.length) throw new StewardAggregateError('STEWARD_BLUEPRINT_INVALID', errors);
  return files;
}

/**
 * Reads the files as strict UTF-8; `file` in the result is relative to `base` when given (for readable
 * error positions), otherwise the path as found. Problems (dangling symlinks, invalid UTF-8) are
 * collected in `errors`; the files that could be read are still returned so their own errors show too.
 */
export async function loadBlueprintFiles(
  paths: string[],
  opts: { base?: string } = {},
): Promise<{ files: { file: string; text: string }[]; errors: StewardError[]; realDirs: string[] }> {
  const found = await findBlueprintFiles(paths);
  const name = (f: string) => (opts.base ? relative(opts.base, f) : f);
  const errors = found.errors.map((e) => (opts.base && e.position?.file ? new StewardError(e.code, e.message, { position: { ...e.position, file: name(e.position.file) } }) : e));
  const read = await Promise.all(
    found.files.map(async (f) => {
      try {
        return decodeUtf8(await readFile(f), name(f));
      } catch (e) {
        return { error: cannotRead(name(f), why(e, false)) };
      }
    }),
  );
  const files: { file: string; text: string }[] = [];
  read.forEach((r, i) => {
    if ('text' in r) files.push({ file: name(found.files[i]!), text: r.text });
    else errors.push(r.error);
  });
  return { files, errors, realDirs: found.realDirs };
}

/**
 * loadBlueprintFiles for callers that take only file contents: any problem rejects the whole load
 * (StewardAggregateError with every positioned problem) rather than compiling without the file, because a
 * blueprint left out is a policy left out.
 */
export async function readBlueprintFiles(paths: string[], opts: { base?: string } = {}): Promise<{ file: string; text: string }[]> {
  const { files, errors } = await loadBlueprintFiles(paths, opts);
  if (errors.length) throw new StewardAggregateError('STEWARD_BLUEPRINT_INVALID', errors);
  return files;
}
