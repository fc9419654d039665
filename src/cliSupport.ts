// What the CLI's commands share: the usage error, one-line error messages and the token lifetime syntax.

/** A mistake in how the command was called; the CLI adds where to find help. */
export class UsageError extends Error {}

/** Any error as one line: its message with line breaks folded, never a stack. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = message.replace(/\s*\n\s*/g, ' ').trim();
  return text === '' ? (error instanceof Error ? error.name : 'failed') : text;
}

const SPAN = /^(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)$/i;

/** `--ttl`: whole seconds ("3600") or a whole number with a unit ("30m", "1h", "7d"); anything else is a usage error. */
export function parseTtl(text: string): number | string {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed) && Number(trimmed) > 0) return Number(trimmed);
  const match = SPAN.exec(trimmed);
  if (match && Number(match[1]) > 0) return `${match[1]}${match[2]!.toLowerCase()}`;
  throw new UsageError(`--ttl "${text}" is not a lifetime: give seconds (3600) or a number with s, m, h, d or w (30m, 1h, 7d)`);
}
