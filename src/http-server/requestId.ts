// X-Request-ID: the caller's, when it is a sane token, or a fresh one. Every response carries it and every
// log line written while serving the request names it, so a 429 a customer reports can be found in the logs.
import { randomUUID } from 'node:crypto';

// Printable, header-safe and short: anything else (control characters, a 10 kB value) would poison the logs.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;

export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && ACCEPTABLE_REQUEST_ID.test(given) ? given : randomUUID();
}
