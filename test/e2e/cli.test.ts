// The CLI as a user runs it (its sources in a child process, so a stale dist/ cannot stand in for them): every command answers --help, and every
// failure, from a bad flag to a data directory the running service holds, is one line on stderr with exit 2.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

const CLI = path.resolve(import.meta.dirname, '../../src/cli.ts');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function governance(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, DATABASE_URL: '', EVENTSTORE_URL: '', ...env }, timeout: 150_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

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
    const commands = ['serve', 'migrate', 'projections', 'token', 'ingest-key'];
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
    const [ttl, flag, unknown, none, role] = await Promise.all([
      governance(['token', '--role', 'OPERATOR', '--ttl', 'banana'], env),
      governance(['token', '--colour'], env),
      governance(['frobnicate'], env),
      governance([], env),
      governance(['token'], env),
    ]);
    expectOneLineFailure(ttl, /--ttl "banana" is not a lifetime/);
    expectOneLineFailure(flag, /Unknown option '--colour'.*governance token --help/);
    expectOneLineFailure(unknown, /unknown command frobnicate/);
    expectOneLineFailure(none, /a command is required/);
    expectOneLineFailure(role, /--role is one of/);
  }, 240_000);

  it('refuses a command on the embedded data directory the running service holds, in one line with exit 2', async () => {
    const run = await governance(['ingest-key', '--tenant', 'acme'], { GOVERNANCE_DATA_DIR: running.dataDir });
    expectOneLineFailure(run, /in use by process \d+/);
  }, 240_000);

  it('mints a token whose lifetime is a number with a unit', async () => {
    const run = await governance(['token', '--role', 'AUDITOR', '--ttl', '30m'], { GOVERNANCE_DATA_DIR: dataDir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  }, 160_000);
});
