// bench:soak's stage processes (stage-main.ts): one per stage, started and sampled over stdin/stdout.
import { fileURLToPath } from 'node:url';
import { LineChild } from '../line-child.js';
import type { StageSample } from './stage-main.js';

const MAIN = fileURLToPath(new URL('./stage-main.ts', import.meta.url));

export class StageProcess {
  private constructor(
    readonly stage: string,
    private readonly child: LineChild,
  ) {}

  /** Starts `stage` with the raw configuration `raw` and waits until it consumes. */
  static async start(stage: string, raw: Record<string, unknown>, env: Record<string, string>): Promise<StageProcess> {
    return new StageProcess(stage, await LineChild.start(['--expose-gc', '--import', 'tsx', MAIN, stage, JSON.stringify(raw)], env, `soak stage ${stage}`));
  }

  async sample(): Promise<StageSample> {
    const v = await this.child.ask('sample');
    if (typeof v.rssMb !== 'number') throw new Error(`soak stage ${this.stage} did not answer a sample (${JSON.stringify(v)})`);
    return v as unknown as StageSample;
  }

  /** Writes a heap snapshot of the stage process (into SOAK_HEAP_SNAPSHOTS); returns its file. */
  async snapshot(tag: string): Promise<string> {
    return String((await this.child.ask(`snapshot ${tag}`)).snapshot);
  }

  /** Stops the stage cleanly (a kill after 20 s). */
  stop(): Promise<void> {
    return this.child.stop();
  }
}
