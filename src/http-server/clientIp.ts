// Who is calling: the client address the edge per-IP limit keys on. X-Forwarded-For is believed only from
// a trusted proxy, and only as far as the chain of trusted proxies reaches: walking from the right, the
// first address that is not a trusted proxy is the client. Taking the leftmost entry instead would let any
// caller pick its own key by sending a forged header.
import { formatIpAddress, parseIpAddress, type IpAddress } from './ipAddress.ts';
import type { TrustedProxies } from './trustedProxies.ts';

export interface ClientIp {
  /** Canonical text of the client address. */
  address: string;
  /**
   * What the per-IP limit counts against: the IPv4 address, or the IPv6 /64. One host is usually handed a
   * whole /64, so keying on the /128 would let one caller rotate through 2^64 fresh allowances.
   */
  limitKey: string;
}

export function resolveClientIp(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): ClientIp {
  const peer = parseHop(socketAddress ?? '');
  // A socket always has an address while the request is being served; the fallback keys such a request
  // with every other unknown one instead of failing it.
  if (!peer) return { address: 'unknown', limitKey: 'unknown' };
  if (trusted.empty || !trusted.contains(peer) || forwardedFor === undefined) return describe(peer);
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseHop(hops[i]!);
    // A hop we cannot read was written by the trusted proxy to its right: stop there and key on that proxy.
    if (!hop) break;
    client = hop;
    if (!trusted.contains(hop)) break;
  }
  return describe(client);
}

/** Reads one X-Forwarded-For entry: "1.2.3.4", "1.2.3.4:5678", "[2001:db8::1]:443", "fe80::1%eth0". */
function parseHop(raw: string): IpAddress | null {
  let text = raw.trim();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) return null;
    text = text.slice(1, end);
  } else if (/^[\d.]+:\d+$/.test(text)) {
    text = text.slice(0, text.indexOf(':'));
  }
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  return parseIpAddress(text);
}

function describe(address: IpAddress): ClientIp {
  const text = formatIpAddress(address);
  if (address.family === 4) return { address: text, limitKey: text };
  const network: IpAddress = { family: 6, bytes: new Uint8Array(16) };
  network.bytes.set(address.bytes.subarray(0, 8));
  return { address: text, limitKey: `${formatIpAddress(network)}/64` };
}
