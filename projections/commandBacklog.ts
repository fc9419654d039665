// Read model: each tenant's command backlog as the ledger tells it. Built only from the commands streams'
// events, so once caught up its `undelivered` must equal the guard row's count (src/command-backlog) for every
// tenant; a rebuild from the ledger must reproduce it exactly.
import type { Tx } from '../src/db/db.ts';
import type { Projection, RecordedEvent } from '../src/ledger/index.ts';
import { COMMAND_EVENT_TYPES, type CommandEventType } from '../src/ledger/index.ts';

const CHANGE: Record<CommandEventType, { undelivered: number; accepted: number; rejected: number; settled: number }> = {
  CommandEnqueued: { undelivered: 1, accepted: 1, rejected: 0, settled: 0 },
  CommandRejected: { undelivered: 0, accepted: 0, rejected: 1, settled: 0 },
  CommandDelivered: { undelivered: -1, accepted: 0, rejected: 0, settled: 1 },
  CommandFailed: { undelivered: -1, accepted: 0, rejected: 0, settled: 1 },
  CommandCancelled: { undelivered: -1, accepted: 0, rejected: 0, settled: 1 },
  CommandExpired: { undelivered: -1, accepted: 0, rejected: 0, settled: 1 },
};

export const commandBacklogProjection: Projection = {
  name: 'command-backlog',
  version: 1,
  eventTypes: COMMAND_EVENT_TYPES,
  tables: ['gl_command_backlog_view'],
  async apply(event: RecordedEvent, tx: Tx) {
    const change = CHANGE[event.type as CommandEventType];
    const tenantId = (event.data as { tenantId: string }).tenantId;
    await tx.query(
      `INSERT INTO gl_command_backlog_view AS v (tenant_id, undelivered, accepted_total, rejected_total, settled_total)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (tenant_id) DO UPDATE SET
         undelivered = v.undelivered + EXCLUDED.undelivered,
         accepted_total = v.accepted_total + EXCLUDED.accepted_total,
         rejected_total = v.rejected_total + EXCLUDED.rejected_total,
         settled_total = v.settled_total + EXCLUDED.settled_total`,
      [tenantId, change.undelivered, change.accepted, change.rejected, change.settled],
    );
  },
};
