// A gate-stage process for the gate's crash test: `node --import tsx gate-child.ts <json options>`.
// Real Kafka and Redis, the product's bootstrap (blueprints dir, agents.yaml, the configured LLM). Prints READY
// once joined; SIGKILL is the point.
import { buildConfig } from '../../../src/config/steward-config.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { createLogger } from '../../../src/logger.js';

const o = JSON.parse(process.argv[2]) as { raw: Record<string, unknown> };
const cfg = buildConfig(o.raw, process.env);
const logger = createLogger({ level: process.env.STEWARD_TEST_LOG ?? 'silent' });
const rt = await bootstrapEngine(cfg, ['gate'], logger);
const pipe = await startPipeline(cfg, ['gate'], rt.deps, { logger });
const t = setInterval(() => {
  if (pipe.isReady()) {
    clearInterval(t);
    process.stdout.write('READY\n');
  }
}, 50);
process.once('SIGTERM', () => void pipe.stop().then(() => rt.close()).then(() => process.exit(0)));
