import type { Tx } from '../../db/db.ts';
import type { DeliveryPace } from '../retryAfter.ts';

export type SlotDecision =
  | { kind: 'taken'; undelivered: number }
  /** The commandId was accepted before: its first answer. */
  | { kind: 'duplicate'; undelivered: number; ceiling: number }
  | { kind: 'full'; undelivered: number; pace: DeliveryPace };

interface TakeRow {
  undelivered: number;
  taken: number;
  last_delivered_at: Date | null;
  delivery_interval_ms_ewma: number | null;
  earlier: Array<{ command_id: string; undelivered: number; ceiling: number }> | null;
}

// One statement for a batch of one tenant's commands (distinct ids, in arrival order). It finds the ids
// accepted before (answered as duplicates, taking nothing), takes up to one slot per new command from the
// guard row, and queues as many new commands, first come first served, as it got slots.
//
// The ceiling holds because of how the UPDATE takes slots: concurrent batches of one tenant queue on the
// guard row's lock, and under READ COMMITTED each one computes least(new commands, ceiling - undelivered)
// from the row version left by the one before it, so the count can never pass the ceiling however many
// processes enqueue. When the ceiling was lowered below the count, greatest(..., 0) takes nothing and the
// queue stays as it is. `last_batch_taken` is computed from the same old row as the new count, so reading
// it back says exactly how many this statement took. A concurrent batch that queues one of the same new
// ids fails on gl_commands' primary key (23505); the caller retries the transaction and then finds it.
const TAKE_SLOTS_SQL = `
WITH batch AS (
  SELECT b.command_id, b.device_id, b.n FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS b(command_id, device_id, n)
),
earlier AS (
  SELECT c.command_id, c.undelivered_at_enqueue, c.ceiling_at_enqueue
  FROM gl_commands c JOIN batch ON batch.command_id = c.command_id
  WHERE c.tenant_id = $1
),
fresh AS (
  SELECT batch.command_id, batch.device_id, row_number() OVER (ORDER BY batch.n) AS k
  FROM batch WHERE NOT EXISTS (SELECT 1 FROM earlier WHERE earlier.command_id = batch.command_id)
),
slots AS (
  UPDATE gl_command_backlog_guard SET
    undelivered = undelivered + least((SELECT count(*) FROM fresh)::integer, greatest($4 - undelivered, 0)),
    last_batch_taken = least((SELECT count(*) FROM fresh)::integer, greatest($4 - undelivered, 0))
  WHERE tenant_id = $1
  RETURNING undelivered, last_batch_taken AS taken, last_delivered_at, delivery_interval_ms_ewma
),
queued AS (
  INSERT INTO gl_commands (tenant_id, command_id, device_id, status, enqueued_at, undelivered_at_enqueue, ceiling_at_enqueue)
  SELECT $1, fresh.command_id, fresh.device_id, 'queued', $5, slots.undelivered - slots.taken + fresh.k, $4
  FROM fresh, slots WHERE fresh.k <= slots.taken
  RETURNING 1
)
SELECT slots.undelivered, slots.taken, slots.last_delivered_at, slots.delivery_interval_ms_ewma,
  (SELECT json_agg(json_build_object('command_id', command_id, 'undelivered', undelivered_at_enqueue, 'ceiling', ceiling_at_enqueue)) FROM earlier) AS earlier,
  (SELECT count(*) FROM queued) AS queued
FROM slots`;

/**
 * Decides a batch of one tenant's new commands against its ceiling and queues the accepted ones, in the
 * caller's transaction. The guard row's lock is held until that transaction ends, so the caller appends
 * the ledger events and commits promptly. Returns one decision per command, in order.
 */
export async function takeBacklogSlots(
  tx: Tx,
  tenantId: string,
  commands: ReadonlyArray<{ commandId: string; deviceId: string }>,
  ceiling: number,
  enqueuedAt: Date,
): Promise<SlotDecision[]> {
  const params = [tenantId, commands.map((c) => c.commandId), commands.map((c) => c.deviceId), ceiling, enqueuedAt];
  let found = (await tx.query<TakeRow>(TAKE_SLOTS_SQL, params)).rows[0];
  if (!found) {
    // The tenant's first command: create its guard row, then decide.
    await tx.query('INSERT INTO gl_command_backlog_guard (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING', [tenantId]);
    found = (await tx.query<TakeRow>(TAKE_SLOTS_SQL, params)).rows[0]!;
  }
  const row = found;
  const earlier = new Map((row.earlier ?? []).map((each) => [each.command_id, each]));
  const pace: DeliveryPace = { lastDeliveredAt: row.last_delivered_at, deliveryIntervalMsEwma: row.delivery_interval_ms_ewma };
  const before = row.undelivered - row.taken;
  let fresh = 0;
  const decisions = commands.map((command): SlotDecision => {
    const first = earlier.get(command.commandId);
    if (first) return { kind: 'duplicate', undelivered: first.undelivered, ceiling: first.ceiling };
    fresh++;
    return fresh <= row.taken ? { kind: 'taken', undelivered: before + fresh } : { kind: 'full', undelivered: row.undelivered, pace };
  });
  return answerAcceptedMeanwhile(tx, tenantId, commands, decisions);
}

/**
 * The statement looked for earlier acceptances in its snapshot, taken before it waited for the guard row.
 * A concurrent batch that accepted one of our ids and committed while we waited is not in it: taking a slot
 * for such an id fails on the primary key (and is retried), but an id that got no slot would be refused
 * although it is queued. Now that we hold the guard row no one else can accept for this tenant, and a new
 * statement sees every acceptance committed before: those ids are answered as duplicates.
 */
async function answerAcceptedMeanwhile(
  tx: Tx,
  tenantId: string,
  commands: ReadonlyArray<{ commandId: string }>,
  decisions: SlotDecision[],
): Promise<SlotDecision[]> {
  const refused = commands.filter((_, i) => decisions[i]!.kind === 'full').map((command) => command.commandId);
  if (refused.length === 0) return decisions;
  const { rows } = await tx.query<{ command_id: string; undelivered: number; ceiling: number }>(
    `SELECT command_id, undelivered_at_enqueue AS undelivered, ceiling_at_enqueue AS ceiling
     FROM gl_commands WHERE tenant_id = $1 AND command_id = ANY($2::text[])`,
    [tenantId, refused],
  );
  const accepted = new Map(rows.map((each) => [each.command_id, each]));
  return decisions.map((decision, i) => {
    const meanwhile = decision.kind === 'full' ? accepted.get(commands[i]!.commandId) : undefined;
    return meanwhile ? { kind: 'duplicate', undelivered: meanwhile.undelivered, ceiling: meanwhile.ceiling } : decision;
  });
}
