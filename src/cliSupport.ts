// What the CLI's commands share: the usage error, one-line error messages, the token lifetime syntax, service
// addresses and option values that start with a dash.

/** A mistake in how the command was called; the CLI adds where to find help. */
export class UsageError extends Error {}

/** Any error as one line: its message with line breaks folded, never a stack. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = message.replace(/\s*\n\s*/g, ' ').trim();
  return text === '' ? (error instanceof Error ? error.name : 'failed') : text;
}

const SPAN = /^(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)$/i;
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** `--ttl`: whole seconds ("3600") or a whole number with a unit ("30m", "1h", "7d"), in seconds; anything else is a usage error. */
export function parseTtl(text: string): number {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed) && Number(trimmed) > 0) return Number(trimmed);
  const match = SPAN.exec(trimmed);
  if (match && Number(match[1]) > 0) return Number(match[1]) * UNIT_SECONDS[match[2]![0]!.toLowerCase()]!;
  throw new UsageError(`--ttl "${text}" is not a lifetime: give seconds (3600) or a number with s, m, h, d or w (30m, 1h, 7d)`);
}

/** A lifetime for people: 86400 -> "24h" (hours up to two days), 172800 -> "2d", 90 -> "90s". */
export function formatSeconds(seconds: number): string {
  for (const [unit, size] of [['w', 604_800], ['d', 86_400], ['h', 3600], ['m', 60]] as const) {
    if (unit === 'd' && seconds < 2 * size) continue;
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/**
 * `--url`: a service address as people type it. Without a scheme ("localhost:4000") it is taken as http://;
 * anything that is still not an http(s) URL is a usage error that says what is expected.
 */
export function parseServiceUrl(text: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`--url "${text}" is not an address: give http://host:port (http://localhost:4000)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--url "${text}" is not http or https: give http://host:port`);
  return url.toString().replace(/\/+$/, '');
}

/**
 * node:util parseArgs refuses `--seconds -5` as ambiguous (a value that looks like an option) with a message
 * about its own syntax. The options that take a value get theirs as `--name=value` here, so the command's own
 * check answers ("--seconds "-5" is not a whole number from 1 to 3600").
 */
export function joinDashedValues(args: readonly string[], valueOptions: ReadonlySet<string>): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    if (valueOptions.has(arg) && next !== undefined && /^-[^-]/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}
