// A batch of export lines, each parsed and its leaf hashed: the part of a verify that needs no other line, so
// it runs in worker threads for a large export (leafHashers.ts) or inline for a small one, with the same
// result. The result is packed in a few arrays (one buffer for every hash), so it crosses threads cheaply.
import { checkEvent, leafHash, type LeafEvent } from './leaf.ts';

/** An export line as read (docs/verifiable-ledger.md, "The export file"), nothing about it trusted yet. */
interface ReadLine {
  leaf?: unknown;
  event?: unknown;
  archived?: unknown;
  stored?: { eventId?: unknown; hash?: unknown };
}

export const LineKind = { blank: 0, unparsable: 1, event: 2, archived: 3, missing: 4 } as const;

/** What the verifier's ordered pass needs of each line of a batch, line i at index i. */
export interface AnalysedBatch {
  count: number;
  kinds: Uint8Array;
  /** The line's `leaf`; NaN when it is not a number. */
  leaves: Float64Array;
  /** 32 bytes a line: the recomputed leaf hash of an event, the stored hash of an archived or missing leaf. */
  hashes: Uint8Array;
  /** 1 when the line's hash is whole (a stored hash may not be 32 bytes of hex). */
  hashWhole: Uint8Array;
  /** An event line: the event's id; an archived or missing leaf: the stored event id. */
  eventIds: (string | undefined)[];
  /** An event line with a `stored` claim: its event id (undefined: no claim). */
  storedIds: (string | undefined)[];
  /** An event line: 1 when the stored hash is the recomputed one. */
  hashMatches: Uint8Array;
  /** An event line that cannot be a leaf: why. */
  problems: (string | undefined)[];
}

const HEX_HASH = /^[0-9a-f]{64}$/;

export function analyseBatch(lines: readonly string[]): AnalysedBatch {
  const count = lines.length;
  const batch: AnalysedBatch = {
    count,
    kinds: new Uint8Array(count),
    leaves: new Float64Array(count),
    hashes: new Uint8Array(count * 32),
    hashWhole: new Uint8Array(count),
    eventIds: new Array<string | undefined>(count),
    storedIds: new Array<string | undefined>(count),
    hashMatches: new Uint8Array(count),
    problems: new Array<string | undefined>(count),
  };
  for (let i = 0; i < count; i++) {
    const text = lines[i]!;
    if (text.trim() === '') continue; // kind 0: blank
    let line: ReadLine;
    try {
      line = JSON.parse(text) as ReadLine;
    } catch {
      batch.kinds[i] = LineKind.unparsable;
      continue;
    }
    if (typeof line !== 'object' || line === null) {
      batch.kinds[i] = LineKind.unparsable;
      continue;
    }
    batch.leaves[i] = typeof line.leaf === 'number' ? line.leaf : Number.NaN;
    const stored = line.stored;
    if ('event' in line) {
      batch.kinds[i] = LineKind.event;
      const event = line.event as LeafEvent;
      batch.eventIds[i] = typeof event?.id === 'string' ? event.id : undefined;
      const problem = checkEvent(event);
      if (problem) {
        batch.problems[i] = problem;
        continue;
      }
      const hash = leafHash(event);
      batch.hashes.set(hash, i * 32);
      batch.hashWhole[i] = 1;
      if (stored) {
        batch.storedIds[i] = String(stored.eventId);
        batch.hashMatches[i] = stored.hash === hash.toString('hex') ? 1 : 0;
      }
      continue;
    }
    batch.kinds[i] = line.archived ? LineKind.archived : LineKind.missing;
    batch.eventIds[i] = String(stored?.eventId);
    if (typeof stored?.hash === 'string' && HEX_HASH.test(stored.hash)) {
      batch.hashes.set(Buffer.from(stored.hash, 'hex'), i * 32);
      batch.hashWhole[i] = 1;
    }
  }
  return batch;
}
