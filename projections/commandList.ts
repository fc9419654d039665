// Read models: every accepted command of a tenant with its device, payload, status and times (Query.commands),
// and refusals per tenant, reason and minute (Query.commandRejectionTrend). Built from the commands streams,
// so they read the same on PostgreSQL, PGlite and EventStoreDB ledgers, and a rebuild reproduces them.
import type { Tx } from '../src/db/db.ts';
import type { Projection, RecordedEvent } from '../src/ledger/index.ts';
import { COMMAND_EVENT_TYPES, type CommandEnqueuedData, type CommandFailedData, type CommandRejectedData } from '../src/ledger/index.ts';
import { occurredAt } from '../src/control-plane/index.ts';

const SETTLED_STATUS: Record<string, string> = {
  CommandDelivered: 'delivered',
  CommandFailed: 'failed',
  CommandCancelled: 'cancelled',
  CommandExpired: 'expired',
};

const MINUTE_MS = 60_000;

export const commandListProjection: Projection = {
  name: 'command-list',
  // 2: a cancelled command's reason (migration 0137); the rebuild fills it in for commands cancelled before.
  version: 2,
  eventTypes: COMMAND_EVENT_TYPES,
  tables: ['gl_command_list', 'gl_command_rejections_minute'],
  async apply(event: RecordedEvent, tx: Tx) {
    const at = occurredAt(event);
    if (event.type === 'CommandEnqueued') {
      const data = event.data as CommandEnqueuedData;
      // A commandId counts once per tenant: a replayed acceptance changes nothing.
      await tx.query(
        `INSERT INTO gl_command_list (tenant_id, command_id, device_id, payload, status, enqueued_at)
         VALUES ($1, $2, $3, $4, 'queued', $5) ON CONFLICT (tenant_id, command_id) DO NOTHING`,
        [data.tenantId, data.commandId, data.deviceId, JSON.stringify(data.payload ?? null), at],
      );
      return;
    }
    if (event.type === 'CommandRejected') {
      const data = event.data as CommandRejectedData;
      await tx.query(
        `INSERT INTO gl_command_rejections_minute AS r (tenant_id, bucket_start, reason, rejected) VALUES ($1, $2, $3, 1)
         ON CONFLICT (tenant_id, bucket_start, reason) DO UPDATE SET rejected = r.rejected + 1`,
        [data.tenantId, new Date(Math.floor(at.getTime() / MINUTE_MS) * MINUTE_MS), data.reason],
      );
      return;
    }
    const status = SETTLED_STATUS[event.type];
    if (!status) return;
    const data = event.data as CommandFailedData;
    // A cancel's reason travels in the event's metadata (src/command-backlog/commandEvents.ts).
    const reason = status === 'cancelled' ? (event.metadata.reason ?? null) : null;
    await tx.query(
      `UPDATE gl_command_list SET status = $3, settled_at = $4, error = $5, reason = $6
        WHERE tenant_id = $1 AND command_id = $2 AND status = 'queued'`,
      [data.tenantId, data.commandId, status, at, data.error ?? null, reason],
    );
  },
};
