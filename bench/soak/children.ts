// bench:soak's stage processes (stage-main.ts): one per stage, started and sampled over stdin/stdout.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { StageSample } from './stage-main.js';

const MAIN = fileURLToPath(new URL('./stage-main.ts', import.meta.url));

export class StageProcess {
  private readonly waiting: ((v: Record<string, unknown>) => void)[] = [];
  private exited = false;

  private constructor(
    readonly stage: string,
    readonly proc: ChildProcess,
  ) {
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

  /** Starts `stage` with the raw configuration `raw` and waits until it consumes. */
  static async start(stage: string, raw: Record<string, unknown>, env: Record<string, string>): Promise<StageProcess> {
    const proc = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', MAIN, stage, JSON.stringify(raw)], { stdio: ['pipe', 'pipe', 'inherit'], env });
    const p = new StageProcess(stage, proc);
    const first = await p.next();
    if (first.ready !== true) throw new Error(`soak stage ${stage} did not start (${JSON.stringify(first)})`);
    return p;
  }

  private next(): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.resolve({ exited: this.proc.exitCode });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async sample(): Promise<StageSample> {
    const reply = this.next();
    this.proc.stdin!.write('sample\n');
    const v = await reply;
    if (typeof v.rssMb !== 'number') throw new Error(`soak stage ${this.stage} did not answer a sample (${JSON.stringify(v)})`);
    return v as unknown as StageSample;
  }

  /** Writes a heap snapshot of the stage process (into SOAK_HEAP_SNAPSHOTS); returns its file. */
  async snapshot(tag: string): Promise<string> {
    const reply = this.next();
    this.proc.stdin!.write(`snapshot ${tag}\n`);
    return String((await reply).snapshot);
  }

  /** Stops the stage cleanly (a kill after 20 s). */
  async stop(): Promise<void> {
    if (this.exited) return;
    const done = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.proc.stdin!.write('stop\n');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 20_000);
    await done;
    clearTimeout(t);
  }
}
