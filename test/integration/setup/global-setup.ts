// Vitest global setup for the integration project (vitest.integration.config.ts).
// Finds or starts the services once per run and provides their URLs to every test file:
//   inject('services')  → ServiceUrls (see ./services.ts)
// and, in each test process, process.env.KAFKA_BROKERS / SCHEMA_REGISTRY_URL / REDIS_URL / CLICKHOUSE_URL
// (set by ./env.ts, a setupFile).
import type { TestProject } from 'vitest/node';
import { findServices, toEnv, warmUpKafka } from './services.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = await findServices();
  const { urls } = started;
  process.stderr.write(
    `[integration] services (${urls.source}): kafka ${urls.kafkaBrokers.join(',')}, registry ${urls.schemaRegistryUrl}, ` +
      `redis ${urls.redisUrl}, clickhouse ${urls.clickhouseUrl}\n`,
  );
  await warmUpKafka(urls.kafkaBrokers);
  Object.assign(process.env, toEnv(urls));
  project.provide('services', urls);
  return async () => {
    await started.stop();
  };
}
