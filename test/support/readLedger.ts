// Reading the whole ledger from a test. On PostgreSQL readAll holds back every event committed after the
// oldest write transaction still open on the whole server began (so that a reader never skips one), and
// other suites run on the same server at the same time: a writer's own events can appear after a moment,
// not at once. These helpers wait for what must be there instead of reading once.
import type { AdmissionSummary } from '../../src/governance/index.ts';
import { comparePositions, type Checkpoint, type EventStore, type RecordedEvent } from '../../src/ledger/eventStore.ts';
import { waitFor } from './waitFor.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

/** How long a test waits for events to become readable; long only because another suite's bulk load can hold readers back. */
export const VISIBLE_WITHIN_MS = 50_000;

/**
 * Every event readAll returns now after `from` (the start by default), page by page, restricted to streams
 * with `prefix` when given. A test on a ledger that keeps other runs' events (an EventStoreDB server) passes
 * the head it took at its start, so it reads only what came after.
 */
export async function readAllOf(store: EventStore, prefix = '', pageSize = 200, from: Checkpoint = 'start'): Promise<RecordedEvent[]> {
  const found: RecordedEvent[] = [];
  let after: Checkpoint = from;
  for (;;) {
    const page = await store.readAll(after, pageSize);
    if (page.length === 0) return found;
    found.push(...page.filter((each) => each.stream.startsWith(prefix)));
    after = page.at(-1)!.position;
  }
}

/** readAllOf once `count` events of `prefix` are visible. */
export async function readAllWhen(store: EventStore, prefix: string, count: number, pageSize?: number, from: Checkpoint = 'start'): Promise<RecordedEvent[]> {
  let found: RecordedEvent[] = [];
  await waitFor(async () => (found = await readAllOf(store, prefix, pageSize, from)).length >= count, {
    timeoutMs: VISIBLE_WITHIN_MS,
    description: `${count} events in readAll`,
  });
  return found;
}

/**
 * Every event committed before this call, read once readAll reaches the head the ledger had at the call.
 * Use it for "nothing was appended" checks: a count taken by one plain readAll can miss events still held
 * back, which then show up in the later count as if the checked call had appended them.
 */
export async function readWholeLedger(store: EventStore, pageSize = 1_000): Promise<RecordedEvent[]> {
  const head = await store.headPosition();
  let found: RecordedEvent[] = [];
  await waitFor(
    async () => {
      found = await readAllOf(store, '', pageSize);
      return head === undefined || (found.length > 0 && comparePositions(found.at(-1)!.position, head) >= 0);
    },
    { timeoutMs: VISIBLE_WITHIN_MS, description: 'readAll to reach the ledger’s head' },
  );
  return found;
}

/** The admission summaries of the AdmissionsRecorded events among `events` (other events are passed over). */
export function admissionEntriesOf(events: readonly RecordedEvent[]): AdmissionSummary[] {
  return events.flatMap(admissionSummaryReader());
}
