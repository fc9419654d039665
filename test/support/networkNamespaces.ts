// A network cut, made with Linux network namespaces: a server runs in a namespace of its own, reached from the
// suite over veth links, one per client path. Cutting a path takes its link down inside the namespace: the
// client's packets are dropped, not refused, as when a switch port or a network partition fails (a closed
// port or a killed proxy would answer with a reset at once). Needs root and iproute2 (`ip netns`); without
// them `startNamespacedServer` says why and returns undefined, and the suite is skipped.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { answers, findBinary, run } from './privateServers.ts';
import { waitFor } from './waitFor.ts';

export interface NamespacedServer {
  /** The server's address on each path (10.x.y.z), in the order the paths were asked for. */
  hosts: string[];
  port: number;
  /** Drops every packet on path `index` (its link down inside the namespace) until `restore`. */
  cut(index: number): Promise<void>;
  restore(index: number): Promise<void>;
  dispose(): Promise<void>;
}

/** Whether network namespaces and veth links can be made here (root, iproute2, a kernel that allows both); says why not. */
export function namespacesWork(): boolean {
  if (process.getuid?.() !== 0) {
    console.warn('not root: network namespaces cannot be made, so the network-cut suites are skipped.');
    return false;
  }
  if (!findBinary('ip')) return false;
  const name = `gl-probe-${randomBytes(3).toString('hex')}`;
  const added = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (added.status !== 0) {
    console.warn(`ip netns add failed (${added.stderr.trim()}): the network-cut suites are skipped.`);
    return false;
  }
  spawnSync('ip', ['netns', 'del', name]);
  const link = `gp${randomBytes(3).toString('hex')}`;
  const veth = spawnSync('ip', ['link', 'add', `${link}a`, 'type', 'veth', 'peer', 'name', `${link}b`], { encoding: 'utf8' });
  if (veth.status !== 0) {
    console.warn(`ip link add ... type veth failed (${veth.stderr.trim()}): the network-cut suites are skipped.`);
    return false;
  }
  spawnSync('ip', ['link', 'del', `${link}a`]);
  return true;
}

/**
 * Starts `binary` (args from its port and a temporary directory) inside a new namespace, listening on every
 * address there, reachable over `paths` veth links from this namespace. Addresses are from 10.0.0.0/8, chosen
 * at random per call so suites running at the same time do not collide.
 */
export async function startNamespacedServer(binary: string, args: (port: number, dir: string) => string[], paths: number): Promise<NamespacedServer | undefined> {
  const file = findBinary(binary);
  if (!file || !namespacesWork()) return undefined;
  const id = randomBytes(3).toString('hex');
  const namespace = `gl-${id}`;
  const ip = (...args: string[]) => run('ip', args, false);
  const inside = (...args: string[]) => run('ip', ['netns', 'exec', namespace, 'ip', ...args], false);
  const dir = await mkdtemp(path.join(tmpdir(), `gl-netns-${binary}-`));
  const port = 6379;
  const hosts: string[] = [];
  const links: string[] = [];
  let child: ChildProcess | undefined;
  const dispose = async () => {
    child?.kill('SIGKILL');
    // Deleting the namespace deletes its ends of the links, and with them the ends here.
    await ip('netns', 'del', namespace).catch(() => {});
    for (const link of links) await ip('link', 'del', `${link}h`).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await ip('netns', 'add', namespace);
    await inside('link', 'set', 'lo', 'up');
    const second = randomInt(100, 250);
    const third = randomInt(0, 256);
    for (let index = 0; index < paths; index++) {
      // Interface names stay under 16 characters: `g<id><index>h` here, `g<id><index>n` in the namespace.
      const link = `g${id}${index}`;
      links.push(link);
      const here = `10.${second}.${third}.${index * 4 + 1}`;
      const there = `10.${second}.${third}.${index * 4 + 2}`;
      await ip('link', 'add', `${link}h`, 'type', 'veth', 'peer', 'name', `${link}n`);
      await ip('link', 'set', `${link}n`, 'netns', namespace);
      await ip('addr', 'add', `${here}/30`, 'dev', `${link}h`);
      await ip('link', 'set', `${link}h`, 'up');
      await inside('addr', 'add', `${there}/30`, 'dev', `${link}n`);
      await inside('link', 'set', `${link}n`, 'up');
      hosts.push(there);
    }
    child = spawn('ip', ['netns', 'exec', namespace, file, ...args(port, dir)], { stdio: 'ignore' });
    await waitFor(async () => (await Promise.all(hosts.map((host) => answers(port, host)))).every(Boolean), {
      timeoutMs: 20_000,
      intervalMs: 50,
      description: `${binary} to answer in namespace ${namespace}`,
    });
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    hosts,
    port,
    cut: (index) => inside('link', 'set', `${links[index]}n`, 'down'),
    restore: (index) => inside('link', 'set', `${links[index]}n`, 'up'),
    dispose,
  };
}
