import type { EventMetadata, RecordedEvent } from '../eventStore.ts';

/** The columns every read selects, and how a row becomes a RecordedEvent. */
export const EVENT_COLUMNS = 'global_position, tx_id, event_id, stream, revision, type, data, metadata, recorded_at';

export interface EventRow {
  global_position: bigint;
  tx_id: bigint;
  event_id: string;
  stream: string;
  revision: bigint;
  type: string;
  data: unknown;
  metadata: EventMetadata;
  recorded_at: Date;
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    stream: row.stream,
    revision: row.revision,
    position: { commit: row.tx_id, prepare: row.global_position },
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    recordedAt: row.recorded_at,
  };
}
