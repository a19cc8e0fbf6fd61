// A bench child process spoken to one line at a time: it prints `{"ready":true}` once started, answers each
// command line on stdin with one JSON line on stdout, and exits on `stop` (bench:soak's and bench:scale-out's
// stage processes).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export class LineChild {
  private readonly waiting: ((v: Record<string, unknown>) => void)[] = [];
  private exited = false;

  private constructor(readonly proc: ChildProcess) {
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      let v: Record<string, unknown>;
      try {
        v = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return; // not ours (a library printing to stdout)
      }
      this.waiting.shift()?.(v);
    });
    proc.once('exit', (code) => {
      this.exited = true;
      for (const w of this.waiting.splice(0)) w({ exited: code });
    });
  }

  /** Runs `node <nodeArgs>` and waits for its ready line; `label` names it in the error if it does not start. */
  static async start(nodeArgs: string[], env: Record<string, string>, label: string): Promise<LineChild> {
    const c = new LineChild(spawn(process.execPath, nodeArgs, { stdio: ['pipe', 'pipe', 'inherit'], env }));
    const first = await c.next();
    if (first.ready !== true) throw new Error(`${label} did not start (${JSON.stringify(first)})`);
    return c;
  }

  /** Sends one command line; its answer (or `{exited}` if the process ended first). */
  ask(command: string): Promise<Record<string, unknown>> {
    const reply = this.next();
    if (!this.exited) this.proc.stdin!.write(`${command}\n`);
    return reply;
  }

  /** Stops the process cleanly (a kill after 20 s). */
  async stop(): Promise<void> {
    if (this.exited) return;
    const done = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.proc.stdin!.write('stop\n');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 20_000);
    await done;
    clearTimeout(t);
  }

  private next(): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.resolve({ exited: this.proc.exitCode });
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}
