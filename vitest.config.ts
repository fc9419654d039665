import { defineConfig } from 'vitest/config';

// Two cores: two workers. Set-up hooks get a generous timeout because an embedded PGlite start, cheap on an
// idle machine, can take tens of seconds when both cores are busy with the other worker's suites.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 20_000,
  },
});
