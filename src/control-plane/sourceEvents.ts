// The ledger events an auditor's answer was folded from, so each can be proven (ledgerInclusionProof,
// docs/verifiable-ledger.md): an effective limit at an instant names the events that decide it, a timeline
// change the event that caused it.
import type { Dimension, LimitSourceLevel } from '../governance/index.ts';
import { formatPosition, PLATFORM_STREAM, tenantStream, tierStream, type RecordedEvent } from '../ledger/index.ts';
import { occurredAt } from './view.ts';

/** One ledger event: its id (what ledgerInclusionProof takes) and its position in the ledger. */
export interface LedgerEventRef {
  eventId: string;
  position: string;
}

export function refOf(event: Pick<RecordedEvent, 'id' | 'position'>): LedgerEventRef {
  return { eventId: event.id, position: formatPosition(event.position) };
}

/** The last event of a stream, read as viewOf reads it up to `at`, that `matches`. */
function lastUpTo(events: readonly RecordedEvent[] | undefined, at: Date, matches: (event: RecordedEvent) => boolean): RecordedEvent | undefined {
  let found: RecordedEvent | undefined;
  for (const event of events ?? []) {
    if (occurredAt(event).getTime() > at.getTime()) break;
    if (matches(event)) found = event;
  }
  return found;
}

const ofDimension = (dimension: Dimension, ...types: string[]) => (event: RecordedEvent) =>
  types.includes(event.type) && (event.data as { dimension?: unknown }).dimension === dimension;

/**
 * The events that decide a tenant's effective limit in one dimension at `at`: the tenant's registration or
 * its last tier assignment (which tier it was on), and the event that set the value of the level that wins
 * (its override, its tier's limit, or the platform default; none for the shipped default).
 */
export function decidingEvents(
  streams: ReadonlyMap<string, readonly RecordedEvent[]>,
  query: { tenantId: string; tierId: string | null; dimension: Dimension; source: LimitSourceLevel; at: Date },
): LedgerEventRef[] {
  const { tenantId, tierId, dimension, source, at } = query;
  const tenantEvents = streams.get(tenantStream(tenantId));
  const membership = lastUpTo(tenantEvents, at, (event) => event.type === 'TenantRegistered' || event.type === 'TenantTierAssigned');
  const level =
    source === 'TENANT_OVERRIDE'
      ? lastUpTo(tenantEvents, at, ofDimension(dimension, 'TenantOverrideSet'))
      : source === 'TIER' && tierId !== null
        ? lastUpTo(streams.get(tierStream(tierId)), at, ofDimension(dimension, 'TierLimitSet'))
        : source === 'PLATFORM_DEFAULT'
          ? lastUpTo(streams.get(PLATFORM_STREAM), at, ofDimension(dimension, 'PlatformDefaultSet'))
          : undefined;
  return [membership, level].filter((event): event is RecordedEvent => event !== undefined).map(refOf);
}
