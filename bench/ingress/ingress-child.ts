/**
 * The HTTP ingress as a process of its own, as `steward run --stages none` runs it (docs/http.md "Benchmark"): no
 * stage and no engine in the process. bench:ingress starts it with the bench's settings (argv: topic prefix, agents
 * file, dedupe mode), reads `{"port": N}` from its first stdout line, and stops it by closing its stdin.
 */
import { buildConfig } from '../../src/config/steward-config.js';
import { startHttpIngress } from '../../src/process/http-ingress.js';
import { createLogger } from '../../src/logger.js';
import { benchProcessEnv } from '../sink/services-env.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

async function main(): Promise<void> {
  const [prefix, agents, dedupe] = process.argv.slice(2);
  const cfg = buildConfig(
    {
      topics: { prefix, partitions: 6, reply_partitions: 4 },
      consumer: { group_prefix: prefix },
      redis: { key_prefix: `${prefix}:` },
      limits: { max_event_time_skew_ms: null },
      observability: { enabled: false },
      blueprints: { agents, watch: false },
      http: { enabled: true, port: 0, limits: { rate_per_second: 1_000_000 }, idempotency: { dedupe: dedupe === 'pipeline' ? 'pipeline' : 'ingress' } },
    },
    benchProcessEnv(),
  );
  const ing = await startHttpIngress(cfg, createLogger({ level: 'silent' }));
  console.log(JSON.stringify({ port: ing.port }));
  process.stdin.resume();
  process.stdin.on('end', () => void ing.close().finally(() => process.exit(0)));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
