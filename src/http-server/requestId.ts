// X-Request-ID: the caller's, when it is a sane token, or a fresh one. Every response carries it and every
// log line written while serving the request names it, so a 429 a customer reports can be found in the logs.
import { randomFillSync } from 'node:crypto';

// Printable, header-safe and short: anything else (control characters, a 10 kB value) would poison the logs.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;

export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && ACCEPTABLE_REQUEST_ID.test(given) ? given : freshRequestId();
}

// A fresh ID is a random UUID (version 4, RFC 9562), as crypto.randomUUID makes one, from the same kind of
// pool of random bytes refilled in blocks. It is written as ASCII into a buffer and read out as one string:
// randomUUID joins twenty string pieces instead, and every request without an ID of its own pays for them.
const UUIDS_PER_REFILL = 128;
const random = Buffer.alloc(16 * UUIDS_PER_REFILL);
let used = UUIDS_PER_REFILL;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const text = Buffer.from('00000000-0000-4000-8000-000000000000', 'latin1');
/** Where each byte's two hex digits go in `text`, around the dashes. */
const DIGIT_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

export function freshRequestId(): string {
  if (used === UUIDS_PER_REFILL) {
    randomFillSync(random);
    used = 0;
  }
  const base = 16 * used++;
  for (let i = 0; i < 16; i++) {
    let byte = random[base + i]!;
    // The version (4) in byte 6's high half, the variant (binary 10) in byte 8's top bits.
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    const at = DIGIT_AT[i]!;
    text[at] = HEX_DIGITS[byte >> 4]!;
    text[at + 1] = HEX_DIGITS[byte & 0x0f]!;
  }
  return text.toString('latin1', 0, 36);
}
