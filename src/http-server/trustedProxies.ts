// TRUSTED_PROXY_CIDRS: the proxies whose X-Forwarded-For we believe. A bad entry is a configuration fault
// and stops the service at start, rather than silently trusting nothing (or everything).
import { matchesPrefix, parseIpAddress, type IpAddress } from './ipAddress.ts';

export interface TrustedProxies {
  contains(address: IpAddress): boolean;
  /** True when no proxy is trusted: the socket address is then always the client. */
  readonly empty: boolean;
}

export class InvalidTrustedProxyCidr extends Error {
  constructor(readonly entry: string, reason: string) {
    super(`TRUSTED_PROXY_CIDRS: "${entry}" ${reason}`);
    this.name = 'InvalidTrustedProxyCidr';
  }
}

/** Accepts "10.0.0.0/8", "2001:db8::/32", and bare addresses (a /32 or /128). */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  const networks = entries.map((entry) => {
    const [addressText, prefixText, extra] = entry.trim().split('/');
    if (extra !== undefined) throw new InvalidTrustedProxyCidr(entry, 'has more than one "/"');
    const network = parseIpAddress(addressText ?? '');
    if (!network) throw new InvalidTrustedProxyCidr(entry, 'is not an IPv4 or IPv6 address or CIDR');
    const maxPrefix = network.family === 4 ? 32 : 128;
    // "::ffff:10.0.0.0/104" is an IPv4 network written in IPv6: its prefix counts the 96 mapped bits.
    const mappedOffset = network.family === 4 && addressText!.includes(':') ? 96 : 0;
    let prefixLength = maxPrefix;
    if (prefixText !== undefined) {
      if (!/^\d{1,3}$/.test(prefixText)) throw new InvalidTrustedProxyCidr(entry, 'has a prefix length that is not a number');
      prefixLength = Number(prefixText) - mappedOffset;
      if (prefixLength < 0 || prefixLength > maxPrefix) {
        throw new InvalidTrustedProxyCidr(entry, `has a prefix length outside 0-${maxPrefix + mappedOffset}`);
      }
    }
    return { network, prefixLength };
  });
  return {
    empty: networks.length === 0,
    contains: (address) => networks.some(({ network, prefixLength }) => matchesPrefix(address, network, prefixLength)),
  };
}
