// Runs a bench/ingress script as a child process (the agents' side out of the measured process) and answers its
// last stdout line as JSON; `onTimed` is called when the child prints `timed` (its measured part begins).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function child<T>(script: string, args: string[], env: Record<string, string> = {}, onTimed?: () => void): Promise<T> {
  const c = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(script, import.meta.url)), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  let out = '';
  c.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (onTimed && out.includes('timed\n')) {
      onTimed();
      onTimed = undefined;
    }
  });
  return new Promise((resolve, reject) => {
    c.on('error', reject);
    c.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as T) : reject(new Error(`${script} ${args[0]} exited ${code}`))));
  });
}
