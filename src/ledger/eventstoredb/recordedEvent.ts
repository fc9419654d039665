import type { AllStreamRecordedEvent, RecordedEvent as EsdbRecordedEvent } from '@eventstore/db-client';
import type { EventMetadata, Position, RecordedEvent } from '../eventStore.ts';

/**
 * EventStoreDB's own records ($metadata, $statsCollected, projection links "$>", $-prefixed streams) share
 * $all with ours; the ledger never shows them.
 */
export function isSystemEvent(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

// What servers before 22.6 put in a stream read's position fields: "no position" (2^64 - 1).
const NO_POSITION = 18_446_744_073_709_551_615n;

export function toRecordedEvent(event: AllStreamRecordedEvent | EsdbRecordedEvent, position: Position | undefined = event.position): RecordedEvent {
  if (!position || position.commit === NO_POSITION) {
    // Stream reads carry the $all position only from server 22.6 on; older servers cannot give the port's positions.
    throw new Error(`EventStoreDB gave no position for event ${event.id} of ${event.streamId}: a server of version 22.6 or later is required`);
  }
  return {
    id: event.id,
    stream: event.streamId,
    revision: event.revision,
    position: { commit: position.commit, prepare: position.prepare },
    type: event.type,
    data: event.data,
    metadata: isMetadataObject(event.metadata) ? event.metadata : {},
    recordedAt: event.created,
  };
}

function isMetadataObject(metadata: unknown): metadata is EventMetadata {
  return typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata) && !(metadata instanceof Uint8Array);
}
