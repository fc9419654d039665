// The CLI as a user runs it (its sources in a child process, so a stale dist/ cannot stand in for them): every command answers --help, and every
// failure, from a bad flag to a data directory the running service holds, is one line on stderr with exit 2.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/spawnTs.ts';
import { clearedSettings } from '../support/cleanEnvironment.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

/** A secret the service under test does not use, as a shell might export one. */
const OTHER_SECRET = 'a-secret-exported-in-the-shell-0123456789abcdef';

type Run = CliRun;

/** The CLI on embedded storage unless `env` names a database. */
const governance = (args: string[], env: Record<string, string>): Promise<Run> => runCli(args, { DATABASE_URL: '', EVENTSTORE_URL: '', ...env });

function expectOneLineFailure(run: Run, pattern: RegExp): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('governance CLI', () => {
  let dataDir: string;
  let running: RunningService;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-cli-'));
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
  }, 240_000);

  afterAll(async () => {
    await running?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prints help for the whole CLI and for every command, exit 0', async () => {
    const commands = ['serve', 'migrate', 'projections', 'ledger', 'limits', 'token', 'ingest-key', 'demo'];
    const [overall, ...each] = await Promise.all([governance(['--help'], { GOVERNANCE_DATA_DIR: dataDir }), ...commands.map((command) => governance([command, '--help'], { GOVERNANCE_DATA_DIR: dataDir }))]);
    expect(overall.code).toBe(0);
    for (const command of commands) expect(overall.stdout).toContain(`  ${command}`);
    each.forEach((run, index) => {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^usage: governance ${commands[index]}`));
    });
  }, 240_000);

  it('answers a bad --ttl, an unknown flag, an unknown command and a missing role with one line and exit 2', async () => {
    const env = { GOVERNANCE_DATA_DIR: dataDir };
    const [ttl, flag, unknown, none, role, before] = await Promise.all([
      governance(['token', '--role', 'OPERATOR', '--ttl', 'banana'], env),
      governance(['token', '--colour'], env),
      governance(['frobnicate'], env),
      governance([], env),
      governance(['token'], env),
      governance(['ledger', 'archive', '--before', '2026-13-01'], env),
    ]);
    expectOneLineFailure(ttl, /--ttl "banana" is not a lifetime/);
    expectOneLineFailure(flag, /Unknown option '--colour'.*governance token --help/);
    expectOneLineFailure(unknown, /unknown command frobnicate/);
    expectOneLineFailure(none, /a command is required/);
    expectOneLineFailure(role, /--role is one of/);
    expectOneLineFailure(before, /--before "2026-13-01" is not a day/);
  }, 240_000);

  it('refuses a command on the embedded data directory the running service holds, in one line with exit 2', async () => {
    const run = await governance(['ingest-key', '--tenant', 'acme'], { GOVERNANCE_DATA_DIR: running.dataDir });
    expectOneLineFailure(run, /in use by process \d+/);
  }, 240_000);

  it('mints a token whose lifetime is a number with a unit, and says on stderr which secret signed it', async () => {
    const run = await governance(['token', '--role', 'AUDITOR', '--ttl', '30m'], { GOVERNANCE_DATA_DIR: dataDir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(run.stderr).toContain(`signed with the secret in ${path.join(dataDir, 'jwt-secret')}`);
    const fromEnvironment = await governance(['token', '--role', 'AUDITOR'], { GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_JWT_SECRET: OTHER_SECRET });
    expect(fromEnvironment.stderr).toContain('signed with GOVERNANCE_JWT_SECRET');
  }, 160_000);

  it('refuses at minting a lifetime the service would refuse, naming GOVERNANCE_JWT_MAX_TTL', async () => {
    const [tooLong, allowed] = await Promise.all([
      governance(['token', '--role', 'OPERATOR', '--ttl', '30d'], { GOVERNANCE_DATA_DIR: dataDir }),
      governance(['token', '--role', 'OPERATOR', '--ttl', '30d'], { GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_JWT_MAX_TTL: '31d' }),
    ]);
    expectOneLineFailure(tooLong, /--ttl 30d is longer than the service accepts: GOVERNANCE_JWT_MAX_TTL is 24h/);
    expect(allowed.code, allowed.stderr).toBe(0);
  }, 160_000);

  it("takes the suite's environment from the test, not from the caller's shell", () => {
    // test/support/cleanEnvironment.ts cleared these (run with GOVERNANCE_JWT_SECRET exported to see one listed).
    if (clearedSettings.length > 0) console.log(`cleared the caller's ${clearedSettings.join(', ')}`);
    expect(Object.keys(process.env).filter((name) => name.startsWith('GOVERNANCE_') && !/^GOVERNANCE_(TEST_|QUIET_SKIPS$)/.test(name))).toEqual([]);
  });

  it('runs the demo against the running service: a tier, two tenants, keys, traffic partly refused, and the queries to look', async () => {
    const run = await governance(['demo', '--url', running.baseUrl, '--seconds', '2'], { GOVERNANCE_DATA_DIR: running.dataDir });
    expect(run.code, run.stderr).toBe(0);
    const acme = /acme: (\d+) accepted \(202\), (\d+) refused \(429\)/.exec(run.stdout);
    const globex = /globex: (\d+) accepted \(202\), (\d+) refused \(429\)/.exec(run.stdout);
    expect(Number(acme?.[2])).toBeGreaterThan(0);
    expect(Number(acme?.[1])).toBeGreaterThan(0);
    expect(Number(globex?.[2])).toBe(0);
    expect(run.stdout).toContain('shedTrend(tenantId: \\"acme\\"');
    expect(run.stdout).toContain(`curl -s ${running.baseUrl}/graphql`);
    expect(run.stdout).toContain(`signed the demo's OPERATOR token with the secret in ${path.join(running.dataDir, 'jwt-secret')}`);
    // A second run finds the tier and tenants in place and still works; with a shell that exports a secret the
    // service does not use, the demo finds the service's own, and an address without a scheme is taken as http.
    const again = await governance(['demo', '--url', running.baseUrl.replace('http://', ''), '--seconds', '1'], {
      GOVERNANCE_DATA_DIR: running.dataDir,
      GOVERNANCE_JWT_SECRET: OTHER_SECRET,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('already so (TenantAlreadyRegistered)');
    expect(again.stdout).toContain(`signed the demo's OPERATOR token with the secret in ${path.join(running.dataDir, 'jwt-secret')}`);
  }, 160_000);

  it("says which secrets it tried when the demo has not the service's, and what to give it", async () => {
    const run = await governance(['demo', '--url', running.baseUrl, '--seconds', '1'], { GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_JWT_SECRET: OTHER_SECRET });
    expectOneLineFailure(
      run,
      /refuses tokens signed with GOVERNANCE_JWT_SECRET and with the secret in .*jwt-secret: give the demo the service's GOVERNANCE_DATA_DIR \(or --data-dir\) or its GOVERNANCE_JWT_SECRET/,
    );
    const withDataDir = await governance(['demo', '--url', running.baseUrl, '--seconds', '1', '--data-dir', running.dataDir], { GOVERNANCE_DATA_DIR: dataDir });
    expect(withDataDir.code, withDataDir.stderr).toBe(0);
  }, 160_000);

  it('explains a --seconds below 1 and a --url it cannot use, in one line', async () => {
    const [negative, badUrl] = await Promise.all([
      governance(['demo', '--seconds', '-5'], { GOVERNANCE_DATA_DIR: dataDir }),
      governance(['demo', '--url', 'ftp://localhost:4000'], { GOVERNANCE_DATA_DIR: dataDir }),
    ]);
    expectOneLineFailure(negative, /^governance: --seconds "-5" is not a whole number from 1 to 3600 \(governance demo --help\)$/);
    expectOneLineFailure(badUrl, /--url "ftp:\/\/localhost:4000" is not http or https/);
  }, 160_000);

  it('says in one line when no service answers the demo', async () => {
    const run = await governance(['demo', '--url', 'http://127.0.0.1:9', '--seconds', '1'], { GOVERNANCE_DATA_DIR: dataDir });
    expectOneLineFailure({ ...run, stdout: '' }, /no service answers at http:\/\/127\.0\.0\.1:9/);
  }, 160_000);
});

