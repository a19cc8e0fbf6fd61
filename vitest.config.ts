import { defineConfig } from 'vitest/config';

// Unit project: no services. Integration tests live in vitest.integration.config.ts.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    pool: 'threads',
    testTimeout: 20_000,
  },
});
