// Service replicas as processes of their own, started the way production starts them: `node bin/governance.js
// serve` running the compiled dist/ (npm run build), each on a port of its own, all on one database schema and
// one Redis key prefix, so they share the ledger, the control plane and the counters. The three-replica suite
// (test/e2e/replicas.test.ts) and the scale-out benchmark (bench/scale-out.ts) start them from here; the proxy
// in front of them is ./haproxy.ts. Like ./haproxy.ts this file imports nothing of src/: the replicas are
// the build under test, reached only through their environment, their ports and their signals.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUILD_STAMP, buildInputs, buildInputsDigest } from '../../scripts/buildInputs.ts';
import { SERVICE_NODE_FLAGS } from '../../src/gcTuning.ts';
import { waitFor } from './waitFor.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
// What bin/governance.js runs: the bundle of the compiled sources.
const COMPILED_CLI = path.join(ROOT, 'dist/service/cli.js');

/**
 * Why replicas cannot start from dist/ here (undefined when they can). A dist/ older than a file the build is
 * made from (scripts/buildInputs.ts) is named too, unless the inputs' content is what the build recorded: the
 * replicas would run code other than the tree's, while a file restored or touched unchanged changes nothing.
 */
export function compiledServiceMissing(): string | undefined {
  if (!existsSync(COMPILED_CLI)) return 'dist/ is not built (npm run build)';
  const builtAt = statSync(COMPILED_CLI).mtimeMs;
  const newer = buildInputs(ROOT).find((file) => statSync(path.join(ROOT, file)).mtimeMs > builtAt);
  if (newer === undefined) return undefined;
  const stamp = path.join(ROOT, BUILD_STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === buildInputsDigest(ROOT)) return undefined;
  return `dist/ is older than ${newer} (npm run build)`;
}

/** Whether something accepts TCP connections at the URL's host and port (`defaultPort` when it has none). */
export function tcpAnswers(url: string, defaultPort: number, timeoutMs = 2_000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port || defaultPort), hostname.replace(/^\[|\]$/g, ''));
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface ReplicaOptions {
  /** The server's name at the proxy. */
  name: string;
  port: number;
  grpcPort: number;
  /** Storage, Redis and the rest; every replica of a cluster gets the same. */
  env: Record<string, string>;
}

export interface Replica {
  readonly name: string;
  readonly port: number;
  readonly baseUrl: string;
  /** The running process (a new one after restart). */
  readonly child: ChildProcess;
  output(): string;
  /** Resolves when the current process has exited. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  /** GET /readyz answered 200. */
  ready(): Promise<boolean>;
  /** Starts a new process on the same port and data directory once the last one has exited. */
  restart(): Promise<void>;
  /** CPU time (user + system) of the current process so far, in microseconds (Linux /proc). */
  cpuMicros(): number;
  /** SIGKILLs the process if it still runs and removes its data directory. */
  dispose(): Promise<void>;
}

/** How long a replica may take to listen: generous, for a machine whose two cores are busy with other suites. */
export const LISTEN_WITHIN_MS = 90_000;

/** Starts `node bin/governance.js serve` and resolves once it listens (it may not be ready yet). */
export async function startReplica(options: ReplicaOptions): Promise<Replica> {
  const dataDir = await mkdtemp(path.join(tmpdir(), `gl-replica-${options.name}-`));
  const baseUrl = `http://127.0.0.1:${options.port}`;
  let child!: ChildProcess;
  let output = '';
  let exited!: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  const launch = async () => {
    output = '';
    child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(ROOT, 'bin/governance.js'), 'serve'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...options.env,
        // The compiled build, never the sources through tsx (bin/governance.js falls back to them without dist/).
        GOVERNANCE_RUN_SOURCES: '',
        GOVERNANCE_DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: String(options.port),
        GOVERNANCE_GRPC_PORT: String(options.grpcPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const current = child;
    current.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    current.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((resolve) => current.once('exit', (code, signal) => resolve({ code, signal })));
    await waitFor(() => output.includes('listening on') || current.exitCode !== null || current.signalCode !== null, {
      timeoutMs: LISTEN_WITHIN_MS,
      intervalMs: 50,
      description: `replica ${options.name} to listen`,
    });
    if (!output.includes('listening on')) throw new Error(`replica ${options.name} did not start:\n${output}`);
  };
  const running = () => child.exitCode === null && child.signalCode === null;
  await launch();

  return {
    name: options.name,
    port: options.port,
    baseUrl,
    get child() {
      return child;
    },
    output: () => output,
    exited: () => exited,
    running,
    async ready() {
      try {
        const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        return response.status === 200;
      } catch {
        return false;
      }
    },
    async restart() {
      if (running()) throw new Error(`replica ${options.name} is still running`);
      await launch();
    },
    cpuMicros: () => processCpuMicros(child.pid!),
    async dispose() {
      if (running()) child.kill('SIGKILL');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU time of a process from /proc/<pid>/stat, in microseconds. */
/** The live child processes of process `pid` (Linux: /proc), zombies (ended, not yet reaped) left out. */
export function childProcessesOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(parent) === pid && state !== 'Z') children.push(Number(entry));
    } catch {
      // Ended since the listing.
    }
  }
  return children;
}

export function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime and stime, fields 14 and 15 of the line
  return (ticks * 1_000_000) / CLOCK_TICKS_PER_SECOND;
}
