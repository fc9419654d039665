import type { Tx } from '../../db/db.ts';
import { eventBytes, splitBySize, commandsStream } from '../../ledger/index.ts';
import type { StreamAppend } from '../../ledger/index.ts';
import { commandEvent, type CommandEvent, EXPIRY_ACTOR } from '../commandEvents.ts';

export interface ExpiredCommand {
  tenantId: string;
  commandId: string;
  enqueuedAt: Date;
  /** The tenant's backlog right after this command left it. */
  undelivered: number;
}

interface ExpiredRow {
  tenant_id: string;
  command_id: string;
  enqueued_at: Date;
  undelivered: number;
}

// The oldest commands queued before the cutoff are marked expired, and each tenant's guard gives back as
// many slots as that tenant lost, in one statement. SKIP LOCKED leaves a command that a delivery is
// settling right now to that delivery, and lets two expiring processes share the work instead of queueing.
// The result numbers each tenant's expired commands so every event can carry the backlog after it.
// The guard rows are locked in tenant id order (`guards`: rows are locked as the sorted scan yields them,
// and the UPDATE reaches a row only through it), the order enqueue batches of several tenants lock them
// in, so an expiry pass and such a batch cannot deadlock.
const EXPIRE_SQL = `
WITH due AS (
  SELECT tenant_id, command_id FROM gl_commands
  WHERE status = 'queued' AND enqueued_at < $1
  ORDER BY enqueued_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED
),
expired AS (
  UPDATE gl_commands c SET status = 'expired', settled_at = $2
  FROM due WHERE c.tenant_id = due.tenant_id AND c.command_id = due.command_id
  RETURNING c.tenant_id, c.command_id, c.enqueued_at
),
per_tenant AS (
  SELECT tenant_id, count(*)::integer AS n FROM expired GROUP BY tenant_id
),
guards AS MATERIALIZED (
  SELECT g.tenant_id FROM gl_command_backlog_guard g
  WHERE g.tenant_id IN (SELECT tenant_id FROM per_tenant)
  ORDER BY g.tenant_id
  FOR UPDATE
),
slots AS (
  UPDATE gl_command_backlog_guard g SET undelivered = g.undelivered - per_tenant.n
  FROM per_tenant, guards WHERE g.tenant_id = per_tenant.tenant_id AND guards.tenant_id = g.tenant_id
  RETURNING g.tenant_id, g.undelivered
)
SELECT e.tenant_id, e.command_id, e.enqueued_at,
  (s.undelivered + count(*) OVER (PARTITION BY e.tenant_id) - row_number() OVER (PARTITION BY e.tenant_id ORDER BY e.enqueued_at, e.command_id))::integer AS undelivered
FROM expired e JOIN slots s ON s.tenant_id = e.tenant_id
ORDER BY e.tenant_id, e.enqueued_at, e.command_id`;

/** Expires up to `limit` commands enqueued before `cutoff`, in the caller's transaction. */
export async function expireQueuedCommands(tx: Tx, cutoff: Date, settledAt: Date, limit: number): Promise<ExpiredCommand[]> {
  const { rows } = await tx.query<ExpiredRow>(EXPIRE_SQL, [cutoff, settledAt, limit]);
  return rows.map((row) => ({ tenantId: row.tenant_id, commandId: row.command_id, enqueuedAt: row.enqueued_at, undelivered: row.undelivered }));
}

/**
 * The CommandExpired events of an expiry pass, as appends whose events add up to at most maxBytes each
 * (eventBytes, as EventStoreDB counts them; a single event larger than that goes alone), in order: each
 * tenant's events oldest first, each tenant's stream at most once per append. A pass of 500 commands is one
 * append unless its ids are long; the cap keeps the ledger's appends within what every adapter accepts
 * (src/ledger/appendSize.ts).
 */
export function expiryAppends(commands: readonly ExpiredCommand[], at: Date, ttlMs: number, maxBytes: number): StreamAppend[][] {
  const events = commands.map(({ tenantId, commandId, undelivered, enqueuedAt }) => ({
    tenantId,
    event: commandEvent('CommandExpired', { tenantId, commandId, undelivered, enqueuedAt: enqueuedAt.toISOString(), ttlMs }, EXPIRY_ACTOR, at),
  }));
  return splitBySize(events, ({ event }) => eventBytes(event), maxBytes).map((group) => {
    const byTenant = new Map<string, CommandEvent[]>();
    for (const { tenantId, event } of group) {
      const list = byTenant.get(tenantId);
      if (list) list.push(event);
      else byTenant.set(tenantId, [event]);
    }
    return [...byTenant].map(([tenantId, streamEvents]) => ({ stream: commandsStream(tenantId), events: streamEvents }));
  });
}
