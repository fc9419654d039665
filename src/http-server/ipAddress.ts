// IP addresses as bytes, so a CIDR match is arithmetic and two spellings of one address ("2001:DB8::1",
// "2001:db8:0:0::1", "::ffff:10.0.0.1" for 10.0.0.1) compare equal.

export interface IpAddress {
  family: 4 | 6;
  /** 4 bytes for IPv4, 16 for IPv6. IPv4-mapped IPv6 addresses are stored as IPv4. */
  bytes: Uint8Array;
}

/** Parses a bare address (no port, no brackets, no zone); null when it is not one. */
export function parseIpAddress(text: string): IpAddress | null {
  if (text.includes(':')) return parseIpv6(text);
  const bytes = parseIpv4(text);
  return bytes ? { family: 4, bytes } : null;
}

function parseIpv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    // Leading zeros are refused: some stacks read "010" as octal, and we must not key a client differently.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes[i] = value;
  }
  return bytes;
}

function parseIpv6(text: string): IpAddress | null {
  let head = text;
  let tail: number[] = [];
  // An embedded IPv4 tail ("::ffff:1.2.3.4") stands for the last two groups.
  const lastColon = head.lastIndexOf(':');
  const maybeV4 = head.slice(lastColon + 1);
  if (maybeV4.includes('.')) {
    const v4 = parseIpv4(maybeV4);
    if (!v4) return null;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    head = head.slice(0, lastColon + 1);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const halves = head.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === '') return [];
    const out: number[] = [];
    for (const group of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return null;
      out.push(Number.parseInt(group, 16));
    }
    return out;
  };
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  if (!left || !right) return null;
  const given = left.length + right.length + tail.length;
  let all: number[];
  if (halves.length === 2) {
    if (given > 7) return null;
    all = [...left, ...new Array<number>(8 - given).fill(0), ...right, ...tail];
  } else {
    if (given !== 8) return null;
    all = [...left, ...tail];
  }
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? { family: 4, bytes: bytes.slice(12) } : { family: 6, bytes };
}

/** True when the first `prefixLength` bits of both addresses agree (same family only). */
export function matchesPrefix(address: IpAddress, network: IpAddress, prefixLength: number): boolean {
  if (address.family !== network.family) return false;
  const whole = prefixLength >> 3;
  for (let i = 0; i < whole; i++) if (address.bytes[i] !== network.bytes[i]) return false;
  const rest = prefixLength & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (address.bytes[whole]! & mask) === (network.bytes[whole]! & mask);
}

/** Canonical text: dotted IPv4, or RFC 5952 IPv6 (lower case, longest zero run compressed). */
export function formatIpAddress(address: IpAddress): string {
  if (address.family === 4) return address.bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((address.bytes[i]! << 8) | address.bytes[i + 1]!);
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength && j - i > 1) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
