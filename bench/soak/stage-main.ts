/**
 * One stage of bench:soak in a process of its own (run with --expose-gc): argv[2] is the stage, argv[3] the raw
 * configuration (JSON). It starts the stage as `steward run --stages <stage>` would, prints `{"ready":true}`,
 * then answers each `sample` line on stdin with one JSON line measured after a forced GC — RSS, live heap, and
 * the stage's messages processed and dead-lettered —, answers `snapshot TAG` with a heap snapshot written to
 * SOAK_HEAP_SNAPSHOTS, and stops cleanly on `stop`. The parent (run.ts) samples
 * every stage process this way, so RSS is per process as in a deployment, not one sum of all stages.
 */
import { createInterface } from 'node:readline';
import { buildConfig } from '../../src/config/steward-config.js';
import { createLogger } from '../../src/logger.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import { bootstrapEngine } from '../../src/process/engine-runtime.js';
import { startPipeline, type StageName } from '../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../src/process/sink-stage.js';
import { ledgerSignerFor } from '../../src/process/steward-process.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const gc = (globalThis as { gc?: () => void }).gc;

export interface StageSample {
  stage: string;
  pid: number;
  rssMb: number;
  heapMb: number;
  processed: number;
  dlq: string[];
}

async function main(): Promise<void> {
  const stage = process.argv[2] as StageName;
  const cfg = buildConfig(JSON.parse(process.argv[3]!) as Record<string, unknown>, process.env as Record<string, string>);
  const logger = createLogger({ level: process.env.SOAK_LOG ?? 'silent' });
  const metrics = new StewardMetrics();
  const rt = await bootstrapEngine(cfg, [stage], logger, metrics);
  const pipe = await startPipeline(cfg, [stage], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSignerFor(cfg, logger), metrics) }, { logger, metrics });
  const out = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');
  out({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'sample') {
      gc?.();
      const m = process.memoryUsage();
      const processed = (await metrics.messages.get()).values.filter((v) => v.labels.stage === stage || stage === 'sink').reduce((a, v) => a + v.value, 0);
      const dlq = (await metrics.dlq.get()).values.filter((v) => v.value > 0).map((v) => `${v.labels.stage}/${v.labels.code}:${v.value}`);
      out({ stage, pid: process.pid, rssMb: m.rss / 2 ** 20, heapMb: m.heapUsed / 2 ** 20, processed, dlq } satisfies StageSample);
    } else if (line.startsWith('snapshot ')) {
      // SOAK_HEAP_SNAPSHOTS=<dir>: a heap snapshot of this stage process, to diff what grew (takes seconds).
      gc?.();
      const { writeHeapSnapshot } = await import('node:v8');
      const dir = process.env.SOAK_HEAP_SNAPSHOTS ?? '.';
      out({ snapshot: writeHeapSnapshot(`${dir}/soak-${stage}-${process.pid}-${line.slice(9)}.heapsnapshot`) });
    } else if (line === 'stop') {
      break;
    }
  }
  await pipe.stop();
  await rt.close();
  out({ stopped: true });
  process.exit(0);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
