// A network cut, made with Linux network namespaces: a server runs in a namespace of its own, reached from the
// suite over veth links, one per client path. Cutting a path takes the namespace's end of its link down: the
// host's end loses its carrier and drops what it is given (no RST, no ICMP), so an open connection hangs and a
// new one is never answered, as when a switch port fails or the network partitions (a closed port or a killed
// proxy would answer with a reset at once). Healing brings the link back; connections that survived carry on.
//
// Needs root, iproute2 (`ip`) and a kernel that allows network namespaces and veth links: networkCutMissing()
// says which is lacking, for the suite's skip reason. Names and addresses are chosen at random per namespace,
// so suites running at the same time do not collide.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { answers, findBinary, run } from './privateServers.ts';
import { waitFor } from './waitFor.ts';

/** One veth link between this namespace and the server's. */
export interface NetworkPath {
  /** The namespace's end of the link: where a server inside listens. */
  address: string;
  /** The host's end of the link: where the server's clients come from. */
  peerAddress: string;
}

export interface NetworkNamespace {
  /** The namespace's name (for `ip netns exec`). */
  name: string;
  paths: NetworkPath[];
  /** Drops every packet on path `index` (its link down inside the namespace) until `heal(index)`. */
  cut(index?: number): Promise<void>;
  heal(index?: number): Promise<void>;
  dispose(): Promise<void>;
}

let probed: { reason: string | undefined } | undefined;

/**
 * Why a network cut cannot be made here (undefined when it can): not root, no `ip`, or the kernel refuses a
 * namespace or a veth pair. Probed once per process by making and deleting one of each.
 */
export function networkCutMissing(): string | undefined {
  probed ??= { reason: probe() };
  return probed.reason;
}

function probe(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!findBinary('ip')) return 'ip (iproute2) not installed';
  const id = randomBytes(3).toString('hex');
  const ip = (...args: string[]) => spawnSync('ip', args, { encoding: 'utf8' });
  const added = ip('netns', 'add', `gl-probe-${id}`);
  if (added.status !== 0) return `ip netns add failed (${added.stderr.trim()})`;
  ip('netns', 'del', `gl-probe-${id}`);
  const veth = ip('link', 'add', `gp${id}a`, 'type', 'veth', 'peer', 'name', `gp${id}b`);
  if (veth.status !== 0) return `ip link add ... type veth failed (${veth.stderr.trim()})`;
  ip('link', 'del', `gp${id}a`);
  return undefined;
}

/** A new namespace joined to this one by `paths` veth links, each a /30 of 10.213.0.0/16. */
export async function startNetworkNamespace(paths = 1): Promise<NetworkNamespace> {
  const id = randomBytes(3).toString('hex');
  const name = `gl-${id}`;
  const ip = (...args: string[]) => run('ip', args, false);
  const inside = (...args: string[]) => run('ip', ['netns', 'exec', name, 'ip', ...args], false);
  // Interface names stay under 16 characters: `g<id><index>h` here, `g<id><index>n` in the namespace.
  const links: string[] = [];
  const dispose = async () => {
    // Deleting the namespace deletes its ends of the links, and with them the ends here.
    await ip('netns', 'del', name).catch(() => {});
    for (const link of links) await ip('link', 'del', `${link}h`).catch(() => {});
  };
  const base = randomInt(0, 16_384 - paths) * 4;
  const octets = (n: number) => `10.213.${Math.floor(n / 256)}.${n % 256}`;
  const made: NetworkPath[] = [];
  try {
    await ip('netns', 'add', name);
    await inside('link', 'set', 'lo', 'up');
    for (let index = 0; index < paths; index++) {
      const link = `g${id}${index}`;
      links.push(link);
      const peerAddress = octets(base + index * 4 + 1);
      const address = octets(base + index * 4 + 2);
      await ip('link', 'add', `${link}h`, 'type', 'veth', 'peer', 'name', `${link}n`);
      await ip('link', 'set', `${link}n`, 'netns', name);
      await ip('addr', 'add', `${peerAddress}/30`, 'dev', `${link}h`);
      await ip('link', 'set', `${link}h`, 'up');
      await inside('addr', 'add', `${address}/30`, 'dev', `${link}n`);
      await inside('link', 'set', `${link}n`, 'up');
      made.push({ address, peerAddress });
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    name,
    paths: made,
    cut: (index = 0) => inside('link', 'set', `${links[index]}n`, 'down'),
    heal: (index = 0) => inside('link', 'set', `${links[index]}n`, 'up'),
    dispose,
  };
}

export interface NamespacedServer {
  namespace: NetworkNamespace;
  /** The server's address on each path, in path order. */
  hosts: string[];
  port: number;
  dispose(): Promise<void>;
}

/**
 * Starts `binary` (args from its port and a temporary directory) inside a new namespace, listening on every
 * address there, reachable over `paths` links. Undefined, after saying why, where a cut cannot be made or the
 * binary is missing.
 */
export async function startNamespacedServer(binary: string, args: (port: number, dir: string) => string[], paths: number): Promise<NamespacedServer | undefined> {
  const missing = networkCutMissing();
  if (missing) {
    console.warn(`network-cut suites needing ${binary} are skipped: ${missing}`);
    return undefined;
  }
  const file = findBinary(binary);
  if (!file) return undefined;
  const namespace = await startNetworkNamespace(paths);
  const dir = await mkdtemp(path.join(tmpdir(), `gl-netns-${binary}-`));
  // The namespace has its own ports: the binary's usual one is free there.
  const port = 6379;
  const hosts = namespace.paths.map((link) => link.address);
  let child: ChildProcess | undefined;
  const dispose = async () => {
    child?.kill('SIGKILL');
    await namespace.dispose();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    child = spawn('ip', ['netns', 'exec', namespace.name, file, ...args(port, dir)], { stdio: 'ignore' });
    await waitFor(async () => (await Promise.all(hosts.map((host) => answers(port, host)))).every(Boolean), {
      timeoutMs: 20_000,
      intervalMs: 50,
      description: `${binary} to answer in namespace ${namespace.name}`,
    });
  } catch (error) {
    await dispose();
    throw error;
  }
  return { namespace, hosts, port, dispose };
}
