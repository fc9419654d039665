// Every test file starts without the caller's GOVERNANCE_* settings (vitest.config.ts, setupFiles): a shell that
// exports GOVERNANCE_JWT_SECRET, GOVERNANCE_DATA_DIR or GOVERNANCE_DB_SCHEMA for a production-like setup must not
// change what a suite starts, nor what the child processes it spawns with `...process.env` inherit. A test sets
// what it needs itself. Kept: the switches meant for the test run (GOVERNANCE_TEST_*, GOVERNANCE_QUIET_SKIPS);
// the servers' URLs (DATABASE_URL, REDIS_URL, ...) are not GOVERNANCE_* and stay too.
const KEPT = /^GOVERNANCE_(TEST_|QUIET_SKIPS$)/;

export const clearedSettings: string[] = [];
for (const name of Object.keys(process.env)) {
  if (name.startsWith('GOVERNANCE_') && !KEPT.test(name)) {
    delete process.env[name];
    clearedSettings.push(name);
  }
}
