// HAProxy (Debian's package) in front of service replicas, as a user runs them: a configuration generated into
// a temporary directory, the proxy in the foreground as a child process, and its state read from the admin
// socket (which servers the health check holds up or down).
//
// It lives in test/support because the three-replica suite (test/e2e/replicas.test.ts) owns it; the scale-out
// benchmark (bench/scale-out.ts) starts the same proxy through it, as bench/projection-catchup.ts already takes
// its fixture from here. It imports nothing of src/, so what it proves about the proxy holds for any build.
//
// The configuration is the one docs/scaling.md describes: HTTP mode, `option forwardfor` (the replicas set
// TRUSTED_PROXY_CIDRS to the proxy and key the edge per-IP limit on the address it forwards), round robin,
// a health check on /readyz (a draining replica answers 503 there and is taken out before it stops
// accepting), and retries with redispatch, so a request that meets a replica gone away (refused connection,
// connection closed without an answer) goes to another one instead of failing at the proxy.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface HaproxyServer {
  /** The server's name in the configuration; answers carry it in X-Served-By. */
  name: string;
  port: number;
}

export interface HaproxyOptions {
  /** 127.0.0.1:<port> the proxy listens on. */
  port: number;
  servers: readonly HaproxyServer[];
  /** Health check interval (default 250 ms): a draining replica must be out well within its drain delay. */
  checkIntervalMs?: number;
}

export interface RunningHaproxy {
  port: number;
  baseUrl: string;
  child: ChildProcess;
  /** What the proxy wrote to stdout and stderr so far. */
  output(): string;
  /** The health-check state of each server: UP, DOWN, MAINT, or a transition such as "UP 1/2". */
  serverStates(): Promise<Map<string, string>>;
  /** Sends a command to the admin socket and returns its answer. */
  admin(command: string): Promise<string>;
  stop(): Promise<void>;
}

/** The haproxy binary on PATH, or undefined. */
export function haproxyBinary(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v haproxy'], { encoding: 'utf8' });
  const where = found.stdout.trim();
  return found.status === 0 && where !== '' ? where : undefined;
}

/** The backend's name in the configuration (what serverStates reads). */
export const BACKEND = 'replicas';

export function haproxyConfig(options: HaproxyOptions, adminSocket: string): string {
  const interval = options.checkIntervalMs ?? 250;
  return `global
  maxconn 8192
  stats socket ${adminSocket} mode 600 level admin
  # One thread: the proxy shares the machine's cores with the replicas it measures.
  nbthread 1

defaults
  mode http
  log stdout format short local0 warning
  option httplog
  timeout connect 2s
  timeout client 60s
  timeout server 30s
  timeout queue 10s
  # Without it a check times out after one interval: a busy replica's /readyz (a database round trip) can
  # take longer than that without anything being wrong.
  timeout check 2s
  timeout http-keep-alive 60s
  # A request that finds its replica gone (connection refused, or closed before any answer) is sent again,
  # to another replica (redispatch): a SIGKILLed or restarting replica costs no failed request.
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response response-timeout
  option forwardfor

frontend edge
  bind 127.0.0.1:${options.port}
  default_backend ${BACKEND}

backend ${BACKEND}
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
  http-check expect status 200
  # A replica is out after two failed checks (/readyz 503 while it drains, well within the drain delay) and
  # back after one good one.
  default-server inter ${interval}ms fastinter ${interval}ms downinter ${interval}ms rise 1 fall 2
  http-response set-header X-Served-By %s
${options.servers.map((server) => `  server ${server.name} 127.0.0.1:${server.port} check`).join('\n')}
`;
}

/** The PostgreSQL backend's name in postgresHaproxyConfig. */
export const POSTGRES_BACKEND = 'postgres';

export interface PostgresHaproxyOptions {
  /** 127.0.0.1:<port> the proxy listens on. */
  port: number;
  /** The primary, and the streaming replica that takes over once promoted. */
  primary: HaproxyServer;
  standby: HaproxyServer;
  checkIntervalMs?: number;
}

/**
 * PostgreSQL behind HAProxy in TCP mode, the way a failover without a cluster manager's REST check is often
 * run: every connection goes to the primary while its check passes; once it has failed two checks the
 * connections go to the standby (`backup`), and the sessions still open to the primary are cut
 * (`on-marked-down shutdown-sessions`). The check is a TCP connect: it does not know whether the standby has
 * been promoted yet, so until it is, the service meets a read-only server (its /readyz says so).
 */
export function postgresHaproxyConfig(options: PostgresHaproxyOptions, adminSocket: string): string {
  const interval = options.checkIntervalMs ?? 250;
  return `global
  maxconn 1024
  stats socket ${adminSocket} mode 600 level admin
  nbthread 1

defaults
  mode tcp
  log stdout format short local0 warning
  timeout connect 2s
  timeout client 1h
  timeout server 1h
  timeout check 1s

frontend postgres_in
  bind 127.0.0.1:${options.port}
  default_backend ${POSTGRES_BACKEND}

backend ${POSTGRES_BACKEND}
  default-server inter ${interval}ms fastinter ${interval}ms downinter ${interval}ms rise 1 fall 2 on-marked-down shutdown-sessions
  server ${options.primary.name} 127.0.0.1:${options.primary.port} check
  server ${options.standby.name} 127.0.0.1:${options.standby.port} check backup
`;
}

/** Starts the proxy; resolves once its admin socket answers. Rejects with its output when it does not start. */
export function startHaproxy(options: HaproxyOptions): Promise<RunningHaproxy> {
  return startHaproxyWith(options.port, BACKEND, (adminSocket) => haproxyConfig(options, adminSocket));
}

/** HAProxy in front of a PostgreSQL primary and its standby (postgresHaproxyConfig). */
export function startPostgresHaproxy(options: PostgresHaproxyOptions): Promise<RunningHaproxy> {
  return startHaproxyWith(options.port, POSTGRES_BACKEND, (adminSocket) => postgresHaproxyConfig(options, adminSocket));
}

async function startHaproxyWith(port: number, backend: string, config: (adminSocket: string) => string): Promise<RunningHaproxy> {
  const binary = haproxyBinary();
  if (!binary) throw new Error('haproxy is not installed (Debian: apt-get install haproxy)');
  const dir = await mkdtemp(path.join(tmpdir(), 'gl-haproxy-'));
  const adminSocket = path.join(dir, 'admin.sock');
  const configFile = path.join(dir, 'haproxy.cfg');
  await writeFile(configFile, config(adminSocket));
  const check = spawnSync(binary, ['-c', '-f', configFile], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`haproxy refused its configuration:\n${check.stdout}${check.stderr}`);

  // -db: stay in the foreground, so the proxy is this process's child and ends with it.
  const child = spawn(binary, ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const admin = (command: string) => adminCommand(adminSocket, command);
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}:\n${output}`);
    if (await admin('show info').then(() => true, () => false)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`haproxy's admin socket did not answer within 10 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  return {
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    child,
    output: () => output,
    admin,
    async serverStates() {
      // `show stat` is CSV: "# pxname,svname,...,status,..." then one line per frontend, server and backend.
      const lines = (await admin('show stat')).split('\n').filter((line) => line.trim() !== '');
      const header = lines[0]!.replace(/^#\s*/, '').split(',');
      const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) => header.indexOf(name));
      const states = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const fields = line.split(',');
        if (fields[proxy!] !== backend || fields[server!] === 'BACKEND') continue;
        states.set(fields[server!]!, fields[status!]!);
      }
      return states;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGUSR1 is HAProxy's soft stop; a proxy that is still there after 5 s is killed.
        child.kill('SIGUSR1');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function adminCommand(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    let answer = '';
    socket.setTimeout(5_000, () => socket.destroy(new Error(`haproxy admin socket: no answer to "${command}" within 5 s`)));
    socket.on('connect', () => socket.end(`${command}\n`));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', (hadError) => {
      if (!hadError) resolve(answer);
    });
  });
}
