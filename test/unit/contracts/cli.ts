/**
 * Spawns the `steward` CLI exactly as a test outside the project does: `npx tsx src/cli/main.ts ...`
 * from the repository root, with no STEWARD_* variable inherited (no LLM, no signing key, no source
 * registry, no config). Not a test file itself (no `.test.ts`), shared by the contract tests.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '../../..');
export const CONTRACTS = join(ROOT, 'test/golden/contracts');

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function steward(args: string[], input?: string, env: Record<string, string> = {}): Run {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('STEWARD_')) clean[k] = v;
  const r = spawnSync('npx', ['--no-install', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    input: input ?? '',
    encoding: 'utf8',
    env: { ...clean, ...env },
    timeout: 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** stdout split into lines; the last newline does not make an empty line. */
export const lines = (stdout: string): string[] => (stdout === '' ? [] : stdout.replace(/\n$/, '').split('\n'));
