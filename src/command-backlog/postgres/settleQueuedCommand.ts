import { prepared } from '../../db/preparedStatements.ts';
import type { Tx } from '../../db/db.ts';
import type { CommandSettlement } from '../../ledger/index.ts';
import { DELIVERY_INTERVAL_EWMA_WEIGHT } from '../retryAfter.ts';
import type { SettleDecision } from '../answers.ts';


// Settling and giving the slot back are one statement: the guard is decremented only when this very
// statement moved the command out of 'queued'. Two callers settling the same command queue on its row
// lock; the second re-checks `status = 'queued'` on the settled row, matches nothing, and decrements
// nothing. Deliveries and failures (device outcomes) also update the delivery pace that retryAfterSeconds
// uses (nextDeliveryIntervalEwma in SQL); cancellation and expiry say nothing about delivery speed.
const SETTLE_SQL = prepared(`
WITH settled AS (
  UPDATE gl_commands SET status = $3, settled_at = $4
  WHERE tenant_id = $1 AND command_id = $2 AND status = 'queued'
  RETURNING 1
),
slot AS (
  UPDATE gl_command_backlog_guard SET
    undelivered = undelivered - 1,
    delivery_interval_ms_ewma = CASE
      WHEN NOT $5::boolean OR last_delivered_at IS NULL THEN delivery_interval_ms_ewma
      WHEN delivery_interval_ms_ewma IS NULL THEN greatest(0, extract(epoch FROM ($4::timestamptz - last_delivered_at)) * 1000)
      ELSE delivery_interval_ms_ewma
        + $6::double precision * (greatest(0, extract(epoch FROM ($4::timestamptz - last_delivered_at)) * 1000) - delivery_interval_ms_ewma)
    END,
    last_delivered_at = CASE WHEN $5::boolean THEN greatest(last_delivered_at, $4::timestamptz) ELSE last_delivered_at END
  WHERE tenant_id = $1 AND EXISTS (SELECT 1 FROM settled)
  RETURNING undelivered
)
SELECT (SELECT undelivered FROM slot) AS undelivered`);

/** Moves a queued command to `settlement` and frees its slot, in the caller's transaction. */
export async function settleQueuedCommand(
  tx: Tx,
  command: { tenantId: string; commandId: string },
  settlement: Exclude<CommandSettlement, 'expired'>,
  settledAt: Date,
): Promise<SettleDecision> {
  const pacesDelivery = settlement === 'delivered' || settlement === 'failed';
  const { rows } = await tx.query<{ undelivered: number | null }>(SETTLE_SQL, [
    command.tenantId,
    command.commandId,
    settlement,
    settledAt,
    pacesDelivery,
    DELIVERY_INTERVAL_EWMA_WEIGHT,
  ]);
  const undelivered = rows[0]?.undelivered ?? null;
  if (undelivered !== null) return { kind: 'settled', undelivered };
  // A new statement sees what a concurrent settlement committed while this one waited.
  const current = await tx.query<{ status: string }>('SELECT status FROM gl_commands WHERE tenant_id = $1 AND command_id = $2', [
    command.tenantId,
    command.commandId,
  ]);
  const status = current.rows[0]?.status;
  return status === undefined ? { kind: 'unknown' } : { kind: 'already-settled', settledAs: status };
}
