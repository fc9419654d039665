// A TypeScript entry point of this repository run as a child process (node --import tsx, from the repository's
// root), for e2e suites that need a real process to kill or restart: its output is kept for failure messages.
// The service itself is started so by serveTs; the governance CLI is run to its end by runCli.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../src/gcTuning.ts';
import { freePort } from './privateServers.ts';
import { waitFor } from './waitFor.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface SpawnedTs {
  child: ChildProcess;
  /** Everything the child wrote to stdout and stderr so far, interleaved as it arrived. */
  output: () => string;
  /** The exit code (null when ended by a signal). */
  exited: Promise<number | null>;
}

/** Runs `args` (a .ts file relative to the repository's root, then its arguments) with `env` over this process's. */
export function spawnTs(args: string[], env: Record<string, string>, stdin: 'pipe' | 'ignore' = 'ignore'): SpawnedTs {
  // With the service's node flags, as its launchers start it (src/gcTuning.ts).
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: [stdin, 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** What a CLI run ended with: its exit code (-1 when it could not start, or was ended at its timeout) and its output. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The governance CLI from its sources (src/cli.ts, so a stale dist/ cannot stand in for them) with `args`, and
 * `env` over this process's environment, run to its end; one still running after 150 s is ended.
 */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), ...args],
      { env: { ...process.env, ...env }, timeout: 150_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The settings of the service as a process of its own, over `env`: listening on free ports of 127.0.0.1 (HTTP and
 * gRPC), its data directory and JWT secret, no EventStoreDB, and logs at info (serveTs waits for "listening on").
 * Its shared counters get a Redis key prefix of their own unless `env` names one: a child inherits the run's
 * REDIS_URL, and under the default prefix its tenants' budgets would be those of every other suite's `acme`.
 */
export async function serviceProcessEnv(env: Record<string, string>, dataDir: string, jwtSecret: string): Promise<Record<string, string>> {
  return {
    GOVERNANCE_REDIS_KEY_PREFIX: `gl-test-${randomBytes(5).toString('hex')}:`,
    ...env,
    EVENTSTORE_URL: '',
    GOVERNANCE_DATA_DIR: dataDir,
    GOVERNANCE_JWT_SECRET: jwtSecret,
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    GOVERNANCE_GRPC_PORT: String(await freePort()),
    LOG_LEVEL: 'info',
  };
}

/**
 * `governance serve` from the sources with `env` (serviceProcessEnv), once it listens. Fails with its output if
 * it exits first, and ends it if it does not listen in time.
 */
export async function serveTs(env: Record<string, string>, stdin: 'pipe' | 'ignore' = 'ignore'): Promise<SpawnedTs> {
  const service = spawnTs(['src/cli.ts', 'serve'], env, stdin);
  try {
    await waitFor(() => service.output().includes('listening on') || service.child.exitCode !== null, {
      timeoutMs: 150_000,
      intervalMs: 100,
      description: 'the service to listen',
    });
  } catch (error) {
    service.child.kill('SIGKILL');
    // What it printed says where it stopped (a start that hung once in CI said nothing).
    throw new Error(`${(error as Error).message}; what the service printed (the last 8,000 characters):\n${service.output().slice(-8_000)}`);
  }
  if (service.child.exitCode !== null) throw new Error(`the service exited with ${service.child.exitCode} before it listened:\n${service.output()}`);
  return service;
}
