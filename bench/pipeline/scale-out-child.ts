/**
 * One join tripwire stage of bench:scale-out in a process of its own: argv[2] is the raw configuration (JSON). It
 * starts the stage on bench/pipeline/engine.ts' engine (the one bench:pipeline's stage runs on; its own Redis key
 * prefix, deleted on stop), prints `{"ready":true}`, answers each `sample` line on stdin with one JSON line — the
 * stage's processed count and this process's CPU so far — and stops cleanly on `stop`.
 */
import { createInterface } from 'node:readline';
import { buildConfig } from '../../src/config/steward-config.js';
import { createLogger } from '../../src/logger.js';
import { StewardMetrics } from '../../src/observability/metrics.js';
import { startPipeline } from '../../src/process/pipeline.js';
import { benchEngineDeps } from './engine.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

export interface ChildSample {
  pid: number;
  processed: number;
  /** user + system CPU of this process since it started, µs */
  cpuUs: number;
}

async function main(): Promise<void> {
  const cfg = buildConfig(JSON.parse(process.argv[2]!) as Record<string, unknown>, process.env as Record<string, string>);
  const logger = createLogger({ level: 'silent' });
  const metrics = new StewardMetrics();
  const { deps, close } = await benchEngineDeps(cfg);
  const pipe = await startPipeline(cfg, ['tripwire'], deps, { logger, metrics });
  const out = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');
  out({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'sample') {
      const processed = (await metrics.messages.get()).values.filter((v) => v.labels.stage === 'tripwire').reduce((a, v) => a + v.value, 0);
      const c = process.cpuUsage();
      out({ pid: process.pid, processed, cpuUs: c.user + c.system } satisfies ChildSample);
    } else if (line === 'stop') break;
  }
  await pipe.stop();
  await close();
  out({ stopped: true });
  process.exit(0);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
