import { defineConfig } from 'vitest/config';

// Two cores: two workers. Set-up hooks get a generous timeout because an embedded PGlite start, cheap on an
// idle machine, can take tens of seconds when both cores are busy with the other worker's suites.
// Three tiers, each runnable alone (npm run test:unit, test:integration, test:e2e): unit tests touch no
// server or database; integration tests open a database, a ledger or a broker; end-to-end tests start the
// service. Every tier shares the settings above its projects (extends: true).
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 20_000,
    // The caller's GOVERNANCE_* settings are cleared in every test process (test/support/cleanEnvironment.ts).
    setupFiles: ['test/support/cleanEnvironment.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'] } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'] } },
    ],
  },
});
