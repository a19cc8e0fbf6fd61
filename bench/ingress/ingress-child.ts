/**
 * The HTTP ingress as a process of its own, as `steward run --stages none` runs it (docs/http.md "Benchmark"): no
 * stage and no engine in the process. bench:ingress starts it with the bench's settings (argv: topic prefix, agents
 * file), reads `{"port": N}` from its first stdout line, and stops it by closing its stdin.
 */
import { startHttpIngress } from '../../src/process/http-ingress.js';
import { createLogger } from '../../src/logger.js';
import { benchIngressConfig } from './config.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

async function main(): Promise<void> {
  const [prefix, agents] = process.argv.slice(2);
  const cfg = benchIngressConfig(prefix, agents);
  const ing = await startHttpIngress(cfg, createLogger({ level: 'silent' }));
  console.log(JSON.stringify({ port: ing.port }));
  process.stdin.resume();
  process.stdin.on('end', () => void ing.close().finally(() => process.exit(0)));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
