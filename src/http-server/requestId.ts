// X-Request-ID: the caller's, when it is a sane token, or a fresh one. Every response carries it and every
// log line written while serving the request names it, so a 429 a customer reports can be found in the logs.
import { randomFillSync } from 'node:crypto';

// Printable, header-safe and short: anything else (control characters, a 10 kB value) would poison the logs.
// Nothing it admits needs escaping in JSON either, so an answer may write an ID between quotes as it is.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;

export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && ACCEPTABLE_REQUEST_ID.test(given) ? given : freshRequestId();
}

// A fresh ID is a random UUID (version 4, RFC 9562), as crypto.randomUUID makes one. They are written out a
// block at a time, from one fill of random bytes into one string, and each request takes its 36 characters
// of the block: every request without an ID of its own pays for one substring, not for a string joined from
// pieces (randomUUID joins twenty) or read out of a buffer. A block of 1,024 is 36 kB; an ID kept (in a log
// line, a queued message) keeps its block alive, which is bounded by the IDs in flight.
const UUIDS_PER_BLOCK = 1024;
const UUID_LENGTH = 36;
const random = Buffer.alloc(16 * UUIDS_PER_BLOCK);
const text = Buffer.alloc(UUID_LENGTH * UUIDS_PER_BLOCK);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const DASH = 0x2d;
/** Where each byte's two hex digits go in a UUID, around the dashes at 8, 13, 18 and 23. */
const DIGIT_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
let block = '';
let used = UUIDS_PER_BLOCK;

export function freshRequestId(): string {
  if (used === UUIDS_PER_BLOCK) {
    block = nextBlock();
    used = 0;
  }
  const at = UUID_LENGTH * used++;
  return block.slice(at, at + UUID_LENGTH);
}

function nextBlock(): string {
  randomFillSync(random);
  for (let uuid = 0; uuid < UUIDS_PER_BLOCK; uuid++) {
    const from = 16 * uuid;
    const to = UUID_LENGTH * uuid;
    for (let i = 0; i < 16; i++) {
      let byte = random[from + i]!;
      // The version (4) in byte 6's high half, the variant (binary 10) in byte 8's top bits.
      if (i === 6) byte = (byte & 0x0f) | 0x40;
      else if (i === 8) byte = (byte & 0x3f) | 0x80;
      const at = to + DIGIT_AT[i]!;
      text[at] = HEX_DIGITS[byte >> 4]!;
      text[at + 1] = HEX_DIGITS[byte & 0x0f]!;
    }
    text[to + 8] = DASH;
    text[to + 13] = DASH;
    text[to + 18] = DASH;
    text[to + 23] = DASH;
  }
  return text.toString('latin1');
}
