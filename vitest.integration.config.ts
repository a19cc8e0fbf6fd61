import { defineConfig } from 'vitest/config';

// Integration project: real Kafka, schema registry (Apicurio, Confluent API), Redis and ClickHouse.
// The global setup finds them (environment URLs → Docker via testcontainers → scripts/services.sh)
// and hands the URLs to the tests: `inject('services')` or the helpers in test/integration/setup/.
export default defineConfig({
  test: {
    include: ['test/integration/**/*.int.test.ts'],
    globalSetup: ['test/integration/setup/global-setup.ts'],
    setupFiles: ['test/integration/setup/env.ts'],
    pool: 'forks',
    // Two cores: two files at a time keeps the services responsive.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    fileParallelism: true,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
});
