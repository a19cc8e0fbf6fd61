/**
 * Hot reload of a blueprint directory: fs.watch (recursive) + debounce → recompile. A valid result is
 * swapped in atomically (readers call current() per event and always see one whole set); an invalid one
 * is rejected with its errors and the last good set keeps serving.
 */
import { watch, type FSWatcher } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { StewardError } from '../../errors.js';
import type { EngineConfig } from '../../engine/config.js';
import { compileBlueprintSet, type BlueprintSet } from '../../engine/blueprint/index.js';
import type { FunctionRegistry } from '../../engine/dsl/index.js';
import { sortProblems } from '../../errors.js';
import { findBlueprintFiles, isBlueprintFile, loadBlueprintFiles } from './blueprint-files.js';
import { readSidecars } from './rule-sidecars.js';

export interface ReloadEvent {
  ok: boolean;
  set: BlueprintSet;
  errors: StewardError[];
  warnings: StewardError[];
}

export interface BlueprintHolder {
  current(): BlueprintSet;
  onChange(cb: (ev: ReloadEvent) => void): () => void;
  /** Recompile now (also what the watcher calls); resolves when the attempt finished. */
  reload(): Promise<ReloadEvent>;
  close(): void;
}

export interface WatchOptions {
  config: EngineConfig;
  debounceMs?: number;
  includeBuiltinBaseline?: boolean;
  /** false: load once, no file watching (reload() still works). Default true. */
  watch?: boolean;
  /** Custom DSL functions of the embedding application; every reload compiles against the same registry. */
  functions?: FunctionRegistry;
  /**
   * Also compare the files' (path, size, mtime, inode) every pollMs and reload on a difference. Default
   * 2000; 0 turns it off. fs.watch alone misses changes: on Node 20 (Linux, recursive) a file replaced by
   * rename — how sed -i and many editors save — is no longer watched afterwards, so later edits to it
   * would never apply.
   */
  pollMs?: number;
  /** false: no fs.watch, the poll alone (file systems without change events, e.g. NFS). Default true. */
  fsEvents?: boolean;
}

/** What the poll compares: every blueprint file's path, size, mtime and inode, and the listing's problems. */
async function fingerprint(dir: string): Promise<string> {
  const { files, errors } = await findBlueprintFiles([dir]);
  const parts = await Promise.all(
    files.map(async (f) => {
      const st = await stat(f).catch(() => undefined);
      return st ? `${f}|${st.size}|${st.mtimeMs}|${st.ino}` : `${f}|gone`;
    }),
  );
  return `${parts.join('\n')}\n${errors.map((e) => e.message).join('\n')}`;
}

async function compileDir(dir: string, opts: WatchOptions) {
  const { files, errors: readErrors, realDirs } = await loadBlueprintFiles([dir], { base: dir });
  // Rules locks and MCP import caches beside the blueprints (docs/rules.md); their problems are warnings.
  // The registry beside the blueprints (blueprints/agents.yaml) may name MCP servers for all of them.
  const side = await readSidecars(files, { registryFiles: [join(dir, 'agents.yaml'), join(dir, 'agents.yml')] });
  const compiled = compileBlueprintSet(files, { config: opts.config, includeBuiltinBaseline: opts.includeBuiltinBaseline, functions: opts.functions, sidecars: side.sidecars });
  const res = { ...compiled, warnings: [...side.warnings, ...compiled.warnings] };
  // A file that could not be read (dangling symlink, invalid UTF-8) rejects the set like a file with errors:
  // serving the rest without it would silently drop its policy.
  if (readErrors.length) return { set: undefined, errors: sortProblems([...readErrors, ...res.errors]), warnings: res.warnings, realDirs };
  return { ...res, realDirs };
}

/**
 * Whether a change under the watched directory can affect the set. Besides blueprint files this includes
 * names without a blueprint extension that may be directories or symlinks: a ConfigMap update ends with
 * the atomic rename of `..data_tmp` to `..data`, and that is the event that makes the new files visible.
 */
export function mayAffectBlueprints(name: string): boolean {
  if (isBlueprintFile(name) || /\.(rules|mcp)\.lock$/.test(name)) return true;
  const base = name.split(/[\\/]/).pop() ?? name;
  return base.startsWith('..') || !/\.[A-Za-z0-9]+$/.test(base);
}

/** Loads `dir` once (rejects when it is invalid: there is no last good set yet), then watches it. */
export async function watchBlueprints(dir: string, opts: WatchOptions): Promise<BlueprintHolder> {
  const pollMs = opts.watch === false ? 0 : (opts.pollMs ?? 2000);
  // The fingerprint the set in service was compiled from (taken before compiling, so a change during the
  // compile still differs from it and is picked up by the next poll).
  let last = pollMs > 0 ? await fingerprint(dir).catch(() => '') : '';
  const first = await compileDir(dir, opts);
  if (!first.set) {
    const { StewardAggregateError } = await import('../../errors.js');
    throw new StewardAggregateError('STEWARD_BLUEPRINT_INVALID', first.errors);
  }
  let current: BlueprintSet = first.set;
  let closed = false;
  let syncOutside: (realDirs: readonly string[]) => void = () => {};
  const listeners = new Set<(ev: ReloadEvent) => void>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<ReloadEvent> | undefined;
  let again = false;

  const reload = async (): Promise<ReloadEvent> => {
    if (running) {
      // A change arrived during a compile: run once more afterwards so the last write always wins.
      again = true;
      return running;
    }
    running = (async () => {
      let ev: ReloadEvent;
      do {
        again = false;
        try {
          const fp = pollMs > 0 ? await fingerprint(dir).catch(() => '') : '';
          const res = await compileDir(dir, opts);
          last = fp;
          syncOutside(res.realDirs);
          if (res.set) current = res.set;
          ev = { ok: !!res.set, set: current, errors: res.errors, warnings: res.warnings };
        } catch (e) {
          // The directory may be mid-rename; keep serving and report.
          const { StewardError } = await import('../../errors.js');
          ev = { ok: false, set: current, errors: [new StewardError('STEWARD_BLUEPRINT_INVALID', `reload failed: ${(e as Error).message}`)], warnings: [] };
        }
        for (const cb of listeners) cb(ev);
      } while (again);
      return ev;
    })();
    try {
      return await running;
    } finally {
      running = undefined;
    }
  };

  const onEvent = (_event: string, name: string | Buffer | null): void => {
    if (name && !mayAffectBlueprints(String(name))) return;
    clearTimeout(timer);
    timer = setTimeout(() => void reload(), opts.debounceMs ?? 100);
  };
  let watcher: FSWatcher | undefined;
  if (opts.watch !== false && opts.fsEvents !== false) {
    try {
      watcher = watch(dir, { recursive: true }, onEvent);
    } catch {
      watcher = undefined; // recursive watch unsupported: callers can still reload() (e.g. on SIGHUP)
    }
  }

  // Symlinks may lead out of `dir` (`bp/x.yaml -> ../real/x.yaml`). Node's recursive watch on Linux happens
  // to follow them, but not every platform's does (FSEvents reports real paths), so each real directory
  // outside `dir` that holds a loaded file or was walked gets its own watch, re-synced after every load.
  // Duplicate events are harmless: they fall into the same debounce.
  const outside = new Map<string, FSWatcher>();
  const root = await realpath(dir).catch(() => dir);
  syncOutside = (realDirs: readonly string[]): void => {
    if (opts.watch === false || opts.fsEvents === false || closed) return;
    const want = new Set(realDirs.filter((d) => d !== root && !d.startsWith(root + sep)));
    for (const [d, w] of outside)
      if (!want.has(d)) {
        w.close();
        outside.delete(d);
      }
    for (const d of want) {
      if (outside.has(d)) continue;
      try {
        outside.set(d, watch(d, onEvent));
      } catch {
        // gone already: the next load reports the dangling symlink
      }
    }
  };
  syncOutside(first.realDirs);

  let poll: NodeJS.Timeout | undefined;
  if (pollMs > 0) {
    let busy = false;
    poll = setInterval(() => {
      if (busy || closed || running) return;
      busy = true;
      void fingerprint(dir)
        .then((now) => {
          if (now !== last && !closed) void reload();
        })
        .catch(() => undefined)
        .finally(() => (busy = false));
    }, pollMs);
    poll.unref();
  }

  return {
    current: () => current,
    onChange(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    reload,
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(poll);
      watcher?.close();
      for (const w of outside.values()) w.close();
      outside.clear();
    },
  };
}
