// How big one append may be. EventStoreDB up to 24.10 and KurrentDB 25.0 refuse an append over 1 MiB
// (AppendTooLarge; 25.1 raised the default), and a caller that merges what failed into its next try would
// then fail for ever. So every caller that builds appends from a growing amount of data (the ledger
// Recorder, command expiry, inference spend) keeps each one under MAX_APPEND_BYTES, on every adapter, and
// splits the rest into further appends. The PostgreSQL ledger has no such limit; keeping to it there too
// means a ledger moves between adapters unchanged.
import type { NewEvent } from './eventStore.ts';

/** The serialized size each append is kept under: half the server's smallest default, for its own framing. */
export const MAX_APPEND_BYTES = 512 * 1024;

/** What an event costs beyond its data and metadata: id, type, content type, and the message framing. */
const EVENT_OVERHEAD_BYTES = 128;

/** The UTF-8 size of a value's JSON (what both adapters store and send). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** An event's share of an append, as the server counts it: data, metadata, type, and a fixed overhead. */
export function eventBytes(event: NewEvent): number {
  return jsonBytes(event.data) + jsonBytes(event.metadata ?? {}) + Buffer.byteLength(event.type, 'utf8') + EVENT_OVERHEAD_BYTES;
}

/**
 * Whether an item of `size` starts a new group after a group of `count` items and `bytes` (splitBySize's
 * rule, for a caller that groups items as it makes them): a group never passes maxBytes or maxItems, but an
 * item larger than maxBytes on its own forms a group of one.
 */
export function startsNewGroup(count: number, bytes: number, size: number, maxBytes: number, maxItems = Infinity): boolean {
  return count > 0 && (bytes + size > maxBytes || count >= maxItems);
}

/**
 * Items in order, in groups whose sizes add up to at most maxBytes (and of at most maxItems each). An item
 * larger than maxBytes on its own forms a group of one: the caller makes items that fit.
 */
export function splitBySize<Item>(items: readonly Item[], sizeOf: (item: Item) => number, maxBytes: number, maxItems = Infinity): Item[][] {
  const groups: Item[][] = [];
  let group: Item[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (startsNewGroup(group.length, bytes, size, maxBytes, maxItems)) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(item);
    bytes += size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** A batch of events as appends of at most maxBytes each, in order. */
export function splitAppend<Event extends NewEvent>(events: readonly Event[], maxBytes = MAX_APPEND_BYTES): Event[][] {
  return splitBySize(events, eventBytes, maxBytes);
}

/**
 * The largest data of one event that still fits an append with its metadata: for callers that pack many
 * entries into one event's data (summaries), so that no single event is too large to append.
 */
export function maxEventDataBytes(metadata: NewEvent['metadata'], type: string, maxBytes = MAX_APPEND_BYTES): number {
  return maxBytes - eventBytes({ type, data: null, metadata }) + jsonBytes(null);
}
