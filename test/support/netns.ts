// A network namespace joined to this one by a veth pair, for suites that cut a server off the network the way
// a failed link or switch does: packets vanish, nothing is refused. The server runs inside the namespace (see
// startPrivatePostgres's `netns`), listening on the namespace's end of the link; the suite's processes reach it
// over the link from the host's end. cut() takes the namespace's end down: the host's end loses its carrier and
// drops what it is given (no RST, no ICMP), so an open connection hangs and a new one is never answered, as
// across a real cut. heal() brings it back; connections that survived the cut carry on.
//
// Needs root and `ip` (iproute2) with network namespace support; netnsMissing() says why not, for the suite's
// skip reason. Names and addresses are chosen per process, so suites running at once do not collide.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

export interface NetworkNamespace {
  /** The namespace's name (for `ip netns exec`). */
  name: string;
  /** The namespace's end of the link: where a server inside listens. */
  address: string;
  /** The host's end of the link: where the server's clients come from. */
  peerAddress: string;
  cut(): void;
  heal(): void;
  dispose(): void;
}

function ip(...args: string[]): { ok: boolean; output: string } {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  return { ok: result.status === 0, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}` };
}

function must(...args: string[]): void {
  const result = ip(...args);
  if (!result.ok) throw new Error(`ip ${args.join(' ')} failed: ${result.output}`);
}

/** Why a network namespace cannot be made here (undefined when it can). */
export function netnsMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = `glprobe${process.pid}`;
  const added = ip('netns', 'add', probe);
  if (!added.ok) return `ip netns add failed (${added.output.trim() || 'ip not installed'})`;
  ip('netns', 'del', probe);
  return undefined;
}

export function startNetworkNamespace(): NetworkNamespace {
  const tag = `${process.pid % 100_000}${randomInt(10)}`;
  const name = `glcut${tag}`;
  // Interface names are at most 15 characters.
  const hostEnd = `glh${tag}`;
  const nsEnd = `gln${tag}`;
  // A /30 of 10.213.0.0/16 picked at random: two ends, no neighbours.
  const base = randomInt(0, 16_384) * 4;
  const octets = (n: number) => `10.213.${Math.floor(n / 256)}.${n % 256}`;
  const peerAddress = octets(base + 1);
  const address = octets(base + 2);
  must('netns', 'add', name);
  try {
    must('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', nsEnd);
    must('link', 'set', nsEnd, 'netns', name);
    must('addr', 'add', `${peerAddress}/30`, 'dev', hostEnd);
    must('link', 'set', hostEnd, 'up');
    must('netns', 'exec', name, 'ip', 'addr', 'add', `${address}/30`, 'dev', nsEnd);
    must('netns', 'exec', name, 'ip', 'link', 'set', nsEnd, 'up');
    must('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  } catch (error) {
    ip('link', 'del', hostEnd);
    ip('netns', 'del', name);
    throw error;
  }
  return {
    name,
    address,
    peerAddress,
    cut: () => must('netns', 'exec', name, 'ip', 'link', 'set', nsEnd, 'down'),
    heal: () => must('netns', 'exec', name, 'ip', 'link', 'set', nsEnd, 'up'),
    dispose() {
      ip('link', 'del', hostEnd);
      ip('netns', 'del', name);
    },
  };
}
