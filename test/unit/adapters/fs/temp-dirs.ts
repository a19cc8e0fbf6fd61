import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { BlueprintHolder } from '../../../../src/adapters/fs/blueprint-watcher.js';

/**
 * Temporary directories and watchers for one test file: `tmp()` makes a directory, `holders` collects
 * watchers; after each test the watchers are closed and the directories removed.
 */
export function useTempDirs(prefix: string): { tmp: () => string; holders: BlueprintHolder[] } {
  const dirs: string[] = [];
  const holders: BlueprintHolder[] = [];
  afterEach(() => {
    holders.splice(0).forEach((h) => h.close());
    dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
  });
  return {
    holders,
    tmp: () => {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
  };
}
