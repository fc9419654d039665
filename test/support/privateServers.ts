// Servers of a suite's own, for suites that stop, restart or cut off a dependency: a PostgreSQL cluster
// (initdb + pg_ctl in a temporary directory), a redis-server, a nats-server and a mosquitto (persistent, so
// sessions and their queued messages outlive a restart), each on a free port of
// 127.0.0.1. The machine's shared servers are never touched. As root (CI), PostgreSQL runs as the `postgres`
// user, which initdb requires. Each start returns undefined, after saying why, when its binaries are missing.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { randomInt } from 'node:crypto';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor } from './waitFor.ts';

const PG_BIN = process.env.GOVERNANCE_TEST_PG_BIN ?? postgresBinaries();

/**
 * Where initdb and pg_ctl are, whatever PostgreSQL version is installed: pg_config's bindir when it holds them
 * (Debian's points at /usr/lib/postgresql/<version>/bin), else the newest version under /usr/lib/postgresql
 * (Debian installs initdb there only, not on the PATH), else the PATH. GOVERNANCE_TEST_PG_BIN overrules.
 */
function postgresBinaries(): string {
  const hasTools = (dir: string) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'));
  const config = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const configured = config.status === 0 ? config.stdout.trim() : '';
  if (configured !== '' && hasTools(configured)) return configured;
  const debianRoot = '/usr/lib/postgresql';
  const versions = existsSync(debianRoot)
    ? readdirSync(debianRoot)
        .filter((name) => /^\d+(\.\d+)?$/.test(name))
        .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
    : [];
  for (const version of versions) {
    const dir = path.join(debianRoot, version, 'bin');
    if (hasTools(dir)) return dir;
  }
  const initdb = onPath('initdb');
  return initdb ? path.dirname(initdb) : configured || path.join(debianRoot, 'bin');
}

/**
 * A port of 127.0.0.1 free now, below the kernel's ephemeral range (ip_local_port_range, 32768-60999 by
 * default). A port of that range is what the kernel gives outgoing connections as their source port: one a
 * suite frees for a moment (a server stopped to be started again on it, a service killed and restarted) can be
 * taken by any process's next connection, and the restart then fails or answers someone else. Falls back to a
 * port the kernel picks when none below the range is free.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralRangeStart();
  if (below > LOWEST_PRIVATE_PORT + 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = LOWEST_PRIVATE_PORT + randomInt(below - LOWEST_PRIVATE_PORT);
      if ((await listenOnce(port)) !== undefined) return port;
    }
  }
  const port = await listenOnce(0);
  if (port === undefined) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** Ports the suites pick from start here: below, the well-known and registered services of a machine. */
const LOWEST_PRIVATE_PORT = 10_000;

function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return Number.isInteger(low) ? low! : 32_768;
  } catch {
    return 32_768;
  }
}

/** Listens on `port` (0: one the kernel picks) and closes again: the port, or undefined when it is taken. */
function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}

/** Whether something accepts TCP connections on `host`:`port` (127.0.0.1 by default). */
export function answers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    // A host across a cut link never answers: give up as a closed port would (127.0.0.1 answers or refuses at once).
    if (host !== '127.0.0.1') {
      socket.setTimeout(1000, () => {
        socket.destroy();
        resolve(false);
      });
    }
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function onPath(binary: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' });
  const where = found.stdout.trim();
  return found.status === 0 && where !== '' ? where : undefined;
}

/** Runs a command to completion (as `postgres` when we are root); rejects with its output when it fails. */
export function run(command: string, args: string[], asPostgres: boolean, prefix: readonly string[] = []): Promise<void> {
  const root = process.getuid?.() === 0;
  const [plainFile, plainArgv] = asPostgres && root ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  const [file, argv] = prefix.length > 0 ? [prefix[0]!, [...prefix.slice(1), plainFile, ...plainArgv]] : [plainFile, plainArgv];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${output}`))));
  });
}

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust authentication). */
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** 127.0.0.1, or the cluster's address in its network namespace. */
  host: string;
  dataDir: string;
  /** A fast-mode restart, like `pg_ctlcluster <version> main restart`. */
  restart(): Promise<void>;
  /** `pg_ctl promote`: a streaming replica ends its recovery and becomes a primary. */
  promote(): Promise<void>;
  /** Runs one SQL statement with psql as the superuser, over the cluster's Unix socket. */
  psql(sql: string): Promise<void>;
  /**
   * A crash: SIGKILL of the postmaster (no shutdown checkpoint, nothing flushed), then waiting until its child
   * processes have noticed and gone; start() then runs crash recovery from the WAL. Only what was fsynced
   * before the kill survives it on a cluster started with `durable`.
   */
  crash(): Promise<void>;
  dispose(): Promise<void>;
}

export interface PrivatePostgresOptions {
  /**
   * fsync, synchronous_commit and full_page_writes on, as production runs: a commit is on disk when
   * acknowledged, so a crash() loses nothing acknowledged. Off by default: a throw-away cluster that only stops
   * cleanly does not need to wait for the disk.
   */
  durable?: boolean;
  /**
   * Runs the cluster in network namespace `name` (test/support/networkNamespaces.ts), listening on `address` there and
   * trusting clients from `peerAddress` (the host's end of the link): a cut of that link cuts it off.
   */
  netns?: { name: string; address: string; peerAddress: string };
}

export async function startPrivatePostgres(settings: PrivatePostgresOptions = {}): Promise<PrivatePostgres | undefined> {
  const dir = await postgresDirectory();
  if (!dir) return undefined;
  const data = path.join(dir, 'data');
  await run(path.join(PG_BIN, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], true);
  if (settings.netns) {
    // Clients reach it over the namespace's link, from the address on the other side.
    appendFileSync(path.join(data, 'pg_hba.conf'), `host all all ${settings.netns.peerAddress}/32 trust\n`);
  }
  return runCluster(dir, data, settings);
}

/** A temporary directory the cluster's user owns; undefined, after saying why, without the binaries. */
async function postgresDirectory(): Promise<string | undefined> {
  if (!existsSync(path.join(PG_BIN, 'initdb')) || !existsSync(path.join(PG_BIN, 'pg_ctl'))) {
    console.warn(`PostgreSQL binaries not found in ${PG_BIN}: suites needing a private PostgreSQL are skipped.`);
    return undefined;
  }
  if (process.getuid?.() === 0 && !onPath('runuser')) {
    console.warn('running as root without runuser: a private PostgreSQL cannot be started; those suites are skipped.');
    return undefined;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'gl-pg-'));
  if (process.getuid?.() === 0) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gids = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    await chown(dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
  }
  return dir;
}

async function runCluster(dir: string, data: string, settings: PrivatePostgresOptions): Promise<PrivatePostgres> {
  const port = await freePort();
  const pgCtl = path.join(PG_BIN, 'pg_ctl');
  // No durability settings worth the wait in a throw-away cluster; a clean stop still writes everything. A
  // durable one is for crash(): what it acknowledged must outlive a SIGKILL.
  const durability = settings.durable ? '-c fsync=on -c synchronous_commit=on -c full_page_writes=on' : '-c fsync=off -c synchronous_commit=off -c full_page_writes=off';
  // wal_level=replica (PostgreSQL's default, said here) is what pg_basebackup and a streaming replica need.
  const host = settings.netns?.address ?? '127.0.0.1';
  const options = `-p ${port} -k ${dir} -c listen_addresses=${host} ${durability} -c max_connections=60 -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on`;
  const inNamespace = settings.netns ? ['ip', 'netns', 'exec', settings.netns.name] : [];
  const ctl = (...args: string[]) => run(pgCtl, ['-D', data, '-l', path.join(dir, 'log'), '-o', options, '-w', '-t', '60', ...args], true, inNamespace);
  await ctl('start');
  let running = true;
  return {
    url: `postgres://postgres@${host}:${port}/postgres`,
    port,
    host,
    dataDir: data,
    async stop() {
      await ctl('-m', 'fast', 'stop');
      running = false;
    },
    async start() {
      await ctl('start');
      running = true;
    },
    async restart() {
      await ctl('-m', 'fast', 'restart');
      running = true;
    },
    async promote() {
      await run(pgCtl, ['-D', data, '-w', '-t', '60', 'promote'], true);
    },
    async psql(sql: string) {
      await run(path.join(PG_BIN, 'psql'), ['-h', dir, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', sql], true);
    },
    async crash() {
      // The first line of postmaster.pid is the postmaster's process id.
      const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = childProcessIds(postmaster);
      process.kill(postmaster, 'SIGKILL');
      running = false;
      // A new postmaster refuses to start while a child of the old one still holds the shared memory; each child
      // exits on its own once it sees its postmaster gone.
      await waitFor(() => [postmaster, ...children].every((pid) => !alive(pid)), { timeoutMs: 30_000, description: 'the killed postmaster and its children to exit' });
      // The lock file names the dead postmaster. Where nothing reaps orphans (a container's first process may
      // not) its id stays taken by a zombie, which the next postmaster would take for a live server; after a
      // real crash of the machine there would be no such process at all.
      // The same holds for the Unix socket's lock file.
      await rm(path.join(data, 'postmaster.pid'), { force: true });
      await rm(path.join(dir, `.s.PGSQL.${port}.lock`), { force: true });
    },
    async dispose() {
      if (running) await ctl('-m', 'immediate', 'stop').catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A streaming replica of `primary`, made the way an operator makes one: `pg_basebackup -R` (which writes
 * standby.signal and primary_conninfo) from the running primary, then started as a hot standby on a port of its
 * own. `synchronous`: the primary waits for this replica to have flushed each commit before acknowledging it
 * (synchronous_standby_names = '*'), so a failover to it loses nothing acknowledged. promote() ends its
 * recovery (`pg_ctl promote`): it becomes a primary.
 */
export async function startStreamingReplica(primary: PrivatePostgres, options: { synchronous?: boolean; durable?: boolean } = {}): Promise<PrivatePostgres | undefined> {
  if (!existsSync(path.join(PG_BIN, 'pg_basebackup'))) {
    console.warn(`pg_basebackup not found in ${PG_BIN}: suites needing a streaming replica are skipped.`);
    return undefined;
  }
  const dir = await postgresDirectory();
  if (!dir) return undefined;
  const data = path.join(dir, 'data');
  await run(
    path.join(PG_BIN, 'pg_basebackup'),
    ['-D', data, '-h', primary.host, '-p', String(primary.port), '-U', 'postgres', '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync'],
    true,
  );
  const replica = await runCluster(dir, data, { durable: options.durable ?? false });
  if (options.synchronous) {
    await primary.psql(`ALTER SYSTEM SET synchronous_standby_names = '*'`);
    await primary.psql('SELECT pg_reload_conf()');
  }
  return replica;
}

/** The process ids whose parent is `pid` (from /proc). */
function childProcessIds(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the parent; the command name before it may hold spaces, in parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return children;
}

/** Whether the process runs; a zombie (exited, not yet reaped by whoever adopted it) does not. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A server process of our own that can be stopped and started again on the same port (and storage). */
export interface PrivateServer {
  url: string;
  port: number;
  /** A clean stop (SIGTERM), or with `SIGKILL` a crash: nothing written on the way out. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
  /** What the server logged, for a failure report ('' for a server started without a log). */
  log(): string;
}

/** Where `binary` is installed, or undefined after saying that suites needing it are skipped. */
export function findBinary(binary: string): string | undefined {
  const file = onPath(binary) ?? ['/usr/sbin', '/usr/bin', '/usr/local/bin'].map((at) => path.join(at, binary)).find((at) => existsSync(at));
  if (!file) console.warn(`${binary} not found: suites needing a private ${binary} are skipped.`);
  return file;
}

async function privateProcess(
  binary: string,
  args: (port: number, dir: string) => string[],
  scheme: string,
  port?: number,
  logFile?: (dir: string) => string,
): Promise<PrivateServer | undefined> {
  const file = findBinary(binary);
  if (!file) return undefined;
  const dir = await mkdtemp(path.join(tmpdir(), `gl-${binary}-`));
  port ??= await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(file, args(port, dir), { stdio: 'ignore' });
    child = started;
    started.once('exit', () => {
      if (child === started) child = undefined;
    });
    await waitFor(() => answers(port), { timeoutMs: 20_000, intervalMs: 50, description: `${binary} to answer on port ${port}` });
  };
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const running = child;
    if (!running) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await exited;
    await waitFor(async () => !(await answers(port)), { timeoutMs: 10_000, description: `${binary} to stop listening` });
  };
  await start();
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    start,
    stop: (signal) => stop(signal),
    log: () => (logFile && existsSync(logFile(dir)) ? readFileSync(logFile(dir), 'utf8') : ''),
    async dispose() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function startPrivateRedis(): Promise<PrivateServer | undefined> {
  return privateProcess('redis-server', (port, dir) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], 'redis');
}

export function startPrivateNats(): Promise<PrivateServer | undefined> {
  return privateProcess('nats-server', (port, dir) => ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], 'nats');
}

/**
 * A Mosquitto of the suite's own, with persistence in its temporary directory: a persistent session and the
 * QoS 1 messages queued or in flight for it survive a restart of the broker (written on SIGTERM), as on a
 * production broker. Anonymous clients, 127.0.0.1 only. With `logEveryPacket`, it logs every packet it takes
 * and sends (`log()`), for a suite whose failure must say which side stopped.
 */
export function startPrivateMosquitto(options: { logEveryPacket?: boolean } = {}): Promise<PrivateServer | undefined> {
  const logFile = (dir: string) => path.join(dir, 'mosquitto.log');
  return privateProcess(
    'mosquitto',
    (port, dir) => {
      const conf = path.join(dir, 'mosquitto.conf');
      writeFileSync(
        conf,
        [
          `listener ${port} 127.0.0.1`,
          'allow_anonymous true',
          'persistence true',
          `persistence_location ${dir}/`,
          'autosave_interval 1',
          ...(options.logEveryPacket ? [`log_dest file ${logFile(dir)}`, 'log_type all', 'log_timestamp_format %H:%M:%S'] : []),
          // As root Mosquitto would switch to the mosquitto user, who cannot write the temporary directory.
          ...(process.getuid?.() === 0 ? ['user root'] : []),
          '',
        ].join('\n'),
      );
      return ['-c', conf];
    },
    'mqtt',
    undefined,
    options.logEveryPacket ? logFile : undefined,
  );
}

export interface PrivateRedisCluster {
  /** Every node's `redis://127.0.0.1:<port>`, comma-separated: a REDIS_URL naming the cluster. */
  url: string;
  nodes: PrivateServer[];
  /** The node that is master of `key`'s slot now (by CLUSTER SHARDS as a surviving node sees it). */
  masterOf(key: string): Promise<PrivateServer>;
  /** The port of the running master of `key`'s slot, or undefined while it has none. */
  masterPortOf(key: string): Promise<number | undefined>;
  /** Resolves once every running node reports cluster_state:ok, every replica is in sync and `key`'s slot has a running master. */
  healthy(key: string, timeoutMs?: number): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * A Redis Cluster of six redis-server processes (three masters, each with one replica) on free ports, made by
 * `redis-cli --cluster create`. A node is stopped (or SIGKILLed) through its PrivateServer; its replica takes
 * its slots after `nodeTimeoutMs` and an election. Undefined, after saying why, without redis-server or
 * redis-cli.
 */
export async function startPrivateRedisCluster(options: { nodeTimeoutMs?: number } = {}): Promise<PrivateRedisCluster | undefined> {
  const cli = findBinary('redis-cli');
  if (!cli || !findBinary('redis-server')) return undefined;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1000;
  const nodes: PrivateServer[] = [];
  const dispose = async () => {
    for (const node of nodes) await node.dispose();
  };
  try {
    for (let i = 0; i < 6; i++) {
      // The cluster bus on a free port of its own: by default it is the port plus 10,000, which may be taken, or
      // past 65,535 for a high free port.
      const busPort = await freePort();
      const node = await privateProcess(
        'redis-server',
        (port, dir) => [
          '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
          '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--cluster-node-timeout', String(nodeTimeoutMs),
          '--cluster-port', String(busPort),
        ],
        'redis',
      );
      if (!node) throw new Error('redis-server vanished');
      nodes.push(node);
    }
    await run(cli, ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '1', '--cluster-yes'], false);
  } catch (error) {
    await dispose();
    throw error;
  }
  // Asked without blocking: a suite polls the cluster while it drives admissions on the same event loop.
  const ask = (port: number, ...args: string[]) =>
    new Promise<string>((resolve) => {
      execFile(cli, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 5000 }, (error, stdout) => resolve(error ? '' : stdout));
    });
  const running = async () => {
    const up: PrivateServer[] = [];
    for (const node of nodes) if (await answers(node.port)) up.push(node);
    return up;
  };
  const masterPort = async (key: string): Promise<number | undefined> => {
    const [witness] = await running();
    if (!witness) return undefined;
    const slot = Number((await ask(witness.port, 'CLUSTER', 'KEYSLOT', key)).trim());
    // CLUSTER NODES: `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <state> <slot ranges...>`.
    for (const line of (await ask(witness.port, 'CLUSTER', 'NODES')).split('\n')) {
      const fields = line.trim().split(' ');
      if (!fields[2]?.split(',').includes('master') || fields[2].includes('fail')) continue;
      const owns = fields.slice(8).some((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return from !== undefined && to !== undefined && slot >= from && slot <= to;
      });
      if (owns) return Number(fields[1]!.split('@')[0]!.split(':')[1]);
    }
    return undefined;
  };
  const healthy = async (key: string, timeoutMs = 30_000) => {
    await waitFor(
      async () => {
        const up = await running();
        const port = await masterPort(key);
        if (port === undefined || !up.some((node) => node.port === port)) return false;
        const states = await Promise.all(up.map((node) => ask(node.port, 'CLUSTER', 'INFO')));
        if (!states.every((info) => info.includes('cluster_state:ok'))) return false;
        // A replica that has not finished its first sync refuses to fail over (its data would be too old).
        const replication = await Promise.all(up.map((node) => ask(node.port, 'INFO', 'replication')));
        return replication.every((info) => info.includes('role:master') || info.includes('master_link_status:up'));
      },
      { timeoutMs, intervalMs: 100, description: 'the Redis Cluster to be whole (cluster_state:ok on every running node, every replica in sync)' },
    );
  };
  await healthy('any');
  return {
    url: nodes.map((node) => node.url).join(','),
    nodes,
    async masterOf(key) {
      const port = await masterPort(key);
      const node = nodes.find((each) => each.port === port);
      if (!node) throw new Error(`no running master serves the slot of ${key}`);
      return node;
    },
    masterPortOf: masterPort,
    healthy,
    dispose,
  };
}

export interface PrivateNatsCluster {
  /** Every node's `nats://127.0.0.1:<port>`, comma-separated: a NATS_URL naming the cluster. */
  url: string;
  nodes: PrivateServer[];
  dispose(): Promise<void>;
}

/**
 * A NATS cluster of `size` nats-server processes with JetStream, each with its own store directory, routed to
 * one another on free ports of 127.0.0.1. Resolves once JetStream answers with a meta leader (a stream can be
 * made). A node is stopped and started again through its PrivateServer (same ports, same store). Undefined,
 * after saying why, without nats-server.
 */
export async function startPrivateNatsCluster(size = 3): Promise<PrivateNatsCluster | undefined> {
  if (!findBinary('nats-server')) return undefined;
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  for (let i = 0; i < size; i++) {
    clientPorts.push(await freePort());
    routePorts.push(await freePort());
  }
  const name = `gl-${Math.random().toString(36).slice(2, 8)}`;
  const nodes: PrivateServer[] = [];
  const dispose = async () => {
    for (const node of nodes) await node.dispose();
  };
  try {
    for (let i = 0; i < size; i++) {
      const routes = routePorts.filter((_, other) => other !== i).map((port) => `nats://127.0.0.1:${port}`);
      const node = await privateProcess(
        'nats-server',
        (port, dir) => ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir, '--server_name', `${name}-n${i + 1}`, '--cluster_name', name, '--cluster', `nats://127.0.0.1:${routePorts[i]}`, '--routes', routes.join(',')],
        'nats',
        clientPorts[i],
      );
      if (!node) throw new Error('nats-server vanished');
      nodes.push(node);
    }
    const url = nodes.map((node) => node.url).join(',');
    await waitFor(() => jetStreamAnswers(url), { timeoutMs: 30_000, intervalMs: 200, description: 'the NATS cluster to elect a JetStream meta leader' });
    return { url, nodes, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** Whether JetStream answers an account-info request through any of the servers in `url`. */
async function jetStreamAnswers(url: string): Promise<boolean> {
  const { connect } = await import('nats');
  const connection = await connect({ servers: url.split(','), timeout: 1000 }).catch(() => undefined);
  if (!connection) return false;
  try {
    const manager = await connection.jetstreamManager({ timeout: 1000 });
    await manager.getAccountInfo();
    return true;
  } catch {
    return false;
  } finally {
    await connection.close();
  }
}
