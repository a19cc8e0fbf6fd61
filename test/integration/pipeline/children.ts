// Stage processes for the crash tests (stage-child.ts), started and killed like real deployments.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./stage-child.ts', import.meta.url));

export function startChild(opts: Record<string, unknown>): { proc: ChildProcess; ready: Promise<void> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
  const ready = new Promise<void>((resolve, reject) => {
    let buf = '';
    proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('READY')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
  });
  ready.catch(() => undefined);
  return { proc, ready };
}

export const killed = (p: ChildProcess) => new Promise<void>((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', () => r())));

