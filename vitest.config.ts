import { defineConfig } from 'vitest/config';

// Two cores: two workers, and generous timeouts because real PostgreSQL suites share the machine.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
  },
});
