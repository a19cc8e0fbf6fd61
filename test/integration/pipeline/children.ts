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


export interface CrashScenario {
  /** stage-child options shared by every child (prefix, redisPrefix, partitions, engine, ...). */
  base: Record<string, unknown>;
  traces: { agent_id: string }[];
  send: (messages: { key: string; value: string }[]) => Promise<unknown>;
  /** Traces per send, and the pause between sends (the kill must land while traffic still flows). */
  batch: number;
  pauseMs: number;
  /** When to kill: e.g. once some verdicts were seen. */
  killWhen: () => boolean;
  /** How many traces had a decision, read right after the kill. */
  decided: () => number;
  /** Every child started is pushed here, so the caller can stop them whatever happens. */
  children: ChildProcess[];
}

/**
 * Starts tripwire, scorer and trust-debt stage processes, produces the traces in throttled batches,
 * SIGKILLs tripwire and scorer once `killWhen()` holds, restarts them, and returns after every trace was
 * produced and the restarted processes joined, with the number of traces decided at the kill.
 * The last third of the traces is held back until `killWhen()` holds: on a fast machine the stages could
 * otherwise decide everything first (a CI run saw 1200 of 1200 decided at the kill). Then the held traces
 * are released and the kill lands once the tripwire decides the first of them, so it dies mid-stream.
 */
export async function killMidStream(s: CrashScenario): Promise<number> {
  const start = (stage: string) => {
    const c = startChild({ ...s.base, stages: [stage] });
    s.children.push(c.proc);
    return c;
  };
  const [tw, sc, td] = [start('tripwire'), start('scorer'), start('trust-debt')];
  await Promise.all([tw.ready, sc.ready, td.ready]);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const holdFrom = Math.floor((s.traces.length * 2) / 3);
  const produceAll = (async () => {
    for (let i = 0; i < s.traces.length; i += s.batch) {
      if (i >= holdFrom) await released;
      await s.send(s.traces.slice(i, i + s.batch).map((t) => ({ key: t.agent_id, value: JSON.stringify(t) })));
      await new Promise((r) => setTimeout(r, s.pauseMs));
    }
  })();
  const deadline = Date.now() + 30_000;
  while (!s.killWhen()) {
    if (Date.now() > deadline) {
      release();
      throw new Error('no progress before the kill');
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const before = s.decided();
  release();
  while (s.decided() <= before) {
    if (Date.now() > deadline) throw new Error('no decision after the held traces were released');
    await new Promise((r) => setTimeout(r, 5));
  }
  tw.proc.kill('SIGKILL');
  sc.proc.kill('SIGKILL');
  await Promise.all([killed(tw.proc), killed(sc.proc)]);
  const decidedAtKill = s.decided();
  const [tw2, sc2] = [start('tripwire'), start('scorer')];
  await Promise.all([tw2.ready, sc2.ready, produceAll]);
  return decidedAtKill;
}

/** SIGTERM to every child still running; resolves when all have exited. */
export async function stopChildren(children: ChildProcess[]): Promise<void> {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await Promise.all(children.map(killed));
}
