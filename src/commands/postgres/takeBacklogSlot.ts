import type { Tx } from '../../db/db.ts';
import type { DeliveryPace } from '../retryAfter.ts';

export type SlotDecision =
  | { kind: 'taken'; undelivered: number }
  /** The commandId was accepted before: its first answer. */
  | { kind: 'duplicate'; undelivered: number; ceiling: number }
  | { kind: 'full'; undelivered: number; pace: DeliveryPace };

interface TakeRow {
  undelivered: number | null;
  duplicate_undelivered: number | null;
  duplicate_ceiling: number | null;
}

interface GuardRow {
  undelivered: number;
  last_delivered_at: Date | null;
  delivery_interval_ms_ewma: number | null;
}

// One statement takes a slot and queues the command. The UPDATE's condition is what enforces the ceiling:
// concurrent enqueuers of one tenant queue on the guard row's lock, and under READ COMMITTED each one
// re-evaluates `undelivered < ceiling` on the row version left by the one before it, so the count can
// never pass the ceiling whatever the number of processes. A commandId already queued takes no slot.
// A concurrent enqueue of the same new commandId waits on the guard row, then fails on gl_commands'
// primary key (23505); its caller retries the whole transaction and then finds it as a duplicate.
const TAKE_SLOT_SQL = `
WITH earlier AS (
  SELECT undelivered_at_enqueue, ceiling_at_enqueue FROM gl_commands WHERE tenant_id = $1 AND command_id = $2
),
slot AS (
  UPDATE gl_command_backlog_guard SET undelivered = undelivered + 1
  WHERE tenant_id = $1 AND undelivered < $3 AND NOT EXISTS (SELECT 1 FROM earlier)
  RETURNING undelivered
),
queued AS (
  INSERT INTO gl_commands (tenant_id, command_id, device_id, status, enqueued_at, undelivered_at_enqueue, ceiling_at_enqueue)
  SELECT $1, $2, $4, 'queued', $5, slot.undelivered, $3 FROM slot
  RETURNING undelivered_at_enqueue
)
SELECT (SELECT undelivered_at_enqueue FROM queued) AS undelivered,
       (SELECT undelivered_at_enqueue FROM earlier) AS duplicate_undelivered,
       (SELECT ceiling_at_enqueue FROM earlier) AS duplicate_ceiling`;

/**
 * Takes one slot of the tenant's backlog for a new command and records it as queued, in the caller's
 * transaction; the row lock it takes is held until that transaction ends, so the caller appends the
 * ledger event and commits promptly.
 */
export async function takeBacklogSlot(
  tx: Tx,
  command: { tenantId: string; commandId: string; deviceId: string },
  ceiling: number,
  enqueuedAt: Date,
): Promise<SlotDecision> {
  for (;;) {
    const { rows } = await tx.query<TakeRow>(TAKE_SLOT_SQL, [command.tenantId, command.commandId, ceiling, command.deviceId, enqueuedAt]);
    const row = rows[0]!;
    if (row.undelivered !== null) return { kind: 'taken', undelivered: row.undelivered };
    if (row.duplicate_undelivered !== null) {
      return { kind: 'duplicate', undelivered: row.duplicate_undelivered, ceiling: row.duplicate_ceiling! };
    }
    // No slot: a new statement (a new snapshot) reads the latest committed count. If a delivery freed a
    // slot in between, try again rather than report a full backlog that no longer is; a tenant's first
    // command finds no guard row and creates it.
    const guard = await tx.query<GuardRow>(
      'SELECT undelivered, last_delivered_at, delivery_interval_ms_ewma FROM gl_command_backlog_guard WHERE tenant_id = $1',
      [command.tenantId],
    );
    const current = guard.rows[0];
    if (!current) {
      await tx.query('INSERT INTO gl_command_backlog_guard (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING', [command.tenantId]);
      continue;
    }
    if (current.undelivered < ceiling) continue;
    return {
      kind: 'full',
      undelivered: current.undelivered,
      pace: { lastDeliveredAt: current.last_delivered_at, deliveryIntervalMsEwma: current.delivery_interval_ms_ewma },
    };
  }
}
