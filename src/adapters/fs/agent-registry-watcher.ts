/**
 * Hot reload of the trusted agent registry (agents.yaml). The engine holds one AgentRegistry for its
 * lifetime, so it gets a delegating registry whose target is swapped atomically: a valid edit applies to
 * the next event, an invalid one is rejected with positioned errors and the last good registry serves.
 * The parent directory is watched (not the file) because editors and config managers replace files by rename.
 * A Kubernetes ConfigMap mount makes the file a symlink to `..data/agents.yaml` and updates it by renaming
 * `..data_tmp` over `..data`: the only events are named `..data*`, so those (and extension-less names, which
 * may be symlinked directories) reload too, and a stat poll of the real file catches what no event reports
 * (audit #24 r4, finding 1: a revoked key stayed valid under a ConfigMap).
 */
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { StewardAggregateError, StewardError } from '../../errors.js';
import { parseAgentRegistry, type AgentRegistry } from '../../engine/blueprint/index.js';
import type { AclTier, AgentInfo } from '../../engine/types.js';
import { readUtf8File } from './text.js';

export interface RegistryReloadEvent {
  ok: boolean;
  agents: number;
  errors: StewardError[];
}

export interface AgentRegistryHolder {
  /** Stable object for the engine: every call reads the current registry. */
  readonly registry: AgentRegistry;
  onChange(cb: (ev: RegistryReloadEvent) => void): () => void;
  reload(): Promise<RegistryReloadEvent>;
  close(): void;
}

async function parseFile(file: string, defaultTier: AclTier | undefined): Promise<{ registry?: AgentRegistry; errors: StewardError[] }> {
  // Strict UTF-8: a Latin-1 tool or domain name would otherwise become U+FFFD and never match.
  const r = await readUtf8File(file, file, 'STEWARD_CONFIG');
  if ('error' in r) return { errors: [r.error] };
  return parseAgentRegistry(r.text, file, { defaultTier });
}

/** The real file's identity through any symlinks: a ConfigMap swap changes its inode, an edit its mtime or size. */
async function fingerprint(file: string): Promise<string> {
  const st = await stat(file).catch(() => undefined);
  return st ? `${st.ino}|${st.size}|${st.mtimeMs}` : 'gone';
}

/** Whether a change named `name` in the file's directory may change what `file` reads (as blueprint-watcher's mayAffectBlueprints). */
export function mayAffectRegistry(name: string, fileName: string): boolean {
  return name === fileName || name.startsWith('..') || !/\.[A-Za-z0-9]+$/.test(name);
}

/** Loads `file` (rejects when invalid: there is no last good registry yet), then watches it (events, and a poll every `pollMs`, default 2 s). */
export async function watchAgentRegistry(file: string, opts: { defaultTier?: AclTier; debounceMs?: number; watch?: boolean; pollMs?: number } = {}): Promise<AgentRegistryHolder> {
  const pollMs = opts.watch === false ? 0 : (opts.pollMs ?? 2000);
  // Taken before the parse, so a change during it still differs and is picked up by the next poll.
  let last = pollMs > 0 ? await fingerprint(file) : '';
  const first = await parseFile(file, opts.defaultTier);
  if (!first.registry) throw new StewardAggregateError('STEWARD_CONFIG', first.errors);
  let current: AgentRegistry = first.registry;
  const listeners = new Set<(ev: RegistryReloadEvent) => void>();
  let chain: Promise<RegistryReloadEvent> = Promise.resolve({ ok: true, agents: current.agents.size, errors: [] });

  // Reloads are serialised so the last write always wins.
  const reload = (): Promise<RegistryReloadEvent> => {
    chain = chain.then(async () => {
      let ev: RegistryReloadEvent;
      try {
        if (pollMs > 0) last = await fingerprint(file);
        const r = await parseFile(file, opts.defaultTier);
        if (r.registry) current = r.registry;
        ev = { ok: !!r.registry, agents: current.agents.size, errors: r.errors };
      } catch (e) {
        ev = { ok: false, agents: current.agents.size, errors: [new StewardError('STEWARD_CONFIG', `agent registry reload failed: ${(e as Error).message}`, { position: { file } })] };
      }
      for (const cb of listeners) cb(ev);
      return ev;
    });
    return chain;
  };

  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  if (opts.watch !== false) {
    const name = basename(file);
    try {
      watcher = watch(dirname(file), (_event, changed) => {
        if (changed && !mayAffectRegistry(String(changed), name)) return;
        clearTimeout(timer);
        timer = setTimeout(() => void reload(), opts.debounceMs ?? 100);
      });
    } catch {
      watcher = undefined; // no watch support: the poll and reload() (e.g. on SIGHUP) still work
    }
  }
  let poll: NodeJS.Timeout | undefined;
  if (pollMs > 0) {
    let busy = false;
    poll = setInterval(() => {
      if (busy) return;
      busy = true;
      void fingerprint(file)
        .then((now) => {
          if (now !== last) {
            last = now; // one reload per change, also while the parse is queued
            void reload();
          }
        })
        .finally(() => (busy = false));
    }, pollMs);
    poll.unref();
  }

  const registry: AgentRegistry = {
    get agents(): ReadonlyMap<string, AgentInfo> {
      return current.agents;
    },
    lookup: (agentId) => current.lookup(agentId),
  };
  return {
    registry,
    onChange(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    reload,
    close() {
      clearTimeout(timer);
      clearInterval(poll);
      watcher?.close();
    },
  };
}
