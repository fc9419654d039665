import type { Tx } from '../../db/db.ts';
import { prepared } from '../../db/preparedStatements.ts';
import type { DeliveryPace } from '../retryAfter.ts';
import { decideRepeat, type RepeatDecision } from '../answers.ts';
import type { AcceptedCommandStatus } from '../types.ts';

export type SlotDecision =
  | { kind: 'taken'; undelivered: number }
  /** The commandId was accepted before: the same command again (or how it left), or a conflict. */
  | RepeatDecision
  | { kind: 'full'; undelivered: number; pace: DeliveryPace };

/** One tenant's part of a batch: its ceiling and its new commands (distinct ids, in arrival order). */
export interface SlotRequest {
  tenantId: string;
  ceiling: number;
  commands: ReadonlyArray<{ commandId: string; deviceId: string; fingerprint: string }>;
}

/** An earlier acceptance of one of the batch's ids, as the statements return it. */
interface EarlierRow {
  command_id: string;
  undelivered: number;
  ceiling: number;
  status: AcceptedCommandStatus;
  fingerprint: string | null;
  device_id: string;
}

interface TakeRow {
  tenant_id: string;
  undelivered: number;
  taken: number;
  last_delivered_at: Date | null;
  delivery_interval_ms_ewma: number | null;
  earlier: EarlierRow[] | null;
}

// One statement for a batch of one tenant's commands (the common case, and the cheapest to plan). It finds
// the ids accepted before (answered as duplicates, taking nothing), takes up to one slot per new command from
// the guard row, and queues as many new commands, first come first served, as it got slots.
//
// The ceiling holds because of how the UPDATE takes slots: concurrent batches of one tenant queue on the
// guard row's lock, and under READ COMMITTED each one computes least(new commands, ceiling - undelivered)
// from the row version left by the one before it, so the count can never pass the ceiling however many
// processes enqueue. When the ceiling was lowered below the count, greatest(..., 0) takes nothing and the
// queue stays as it is. `last_batch_taken` is computed from the same old row as the new count, so reading
// it back says exactly how many this statement took. A concurrent batch that queues one of the same new
// ids fails on gl_commands' primary key (23505); the caller retries the transaction and then finds it.
const TAKE_TENANT_SLOTS_SQL = prepared(`
WITH batch AS (
  SELECT b.command_id, b.device_id, b.fingerprint, b.n
  FROM unnest($2::text[], $3::text[], $6::text[]) WITH ORDINALITY AS b(command_id, device_id, fingerprint, n)
),
earlier AS (
  SELECT c.command_id, c.undelivered_at_enqueue, c.ceiling_at_enqueue, c.status, c.fingerprint, c.device_id
  FROM gl_commands c JOIN batch ON batch.command_id = c.command_id
  WHERE c.tenant_id = $1
),
fresh AS (
  SELECT batch.command_id, batch.device_id, batch.fingerprint, row_number() OVER (ORDER BY batch.n) AS k
  FROM batch WHERE NOT EXISTS (SELECT 1 FROM earlier WHERE earlier.command_id = batch.command_id)
),
slots AS (
  UPDATE gl_command_backlog_guard SET
    undelivered = undelivered + least((SELECT count(*) FROM fresh)::integer, greatest($4 - undelivered, 0)),
    last_batch_taken = least((SELECT count(*) FROM fresh)::integer, greatest($4 - undelivered, 0))
  WHERE tenant_id = $1
  RETURNING tenant_id, undelivered, last_batch_taken AS taken, last_delivered_at, delivery_interval_ms_ewma
),
queued AS (
  INSERT INTO gl_commands (tenant_id, command_id, device_id, fingerprint, status, enqueued_at, undelivered_at_enqueue, ceiling_at_enqueue)
  SELECT $1, fresh.command_id, fresh.device_id, fresh.fingerprint, 'queued', $5, slots.undelivered - slots.taken + fresh.k, $4
  FROM fresh, slots WHERE fresh.k <= slots.taken
  RETURNING 1
)
SELECT slots.tenant_id, slots.undelivered, slots.taken, slots.last_delivered_at, slots.delivery_interval_ms_ewma,
  (SELECT json_agg(json_build_object('command_id', command_id, 'undelivered', undelivered_at_enqueue, 'ceiling', ceiling_at_enqueue,
     'status', status, 'fingerprint', fingerprint, 'device_id', device_id)) FROM earlier) AS earlier,
  (SELECT count(*) FROM queued) AS queued
FROM slots`);

// The same for a batch of several tenants' commands, each tenant against its own ceiling (more to plan,
// so it is used only when a batch has several tenants).
//
// The guard rows are taken with INSERT ... ON CONFLICT DO UPDATE, fed in tenant id order: PostgreSQL
// processes (and locks) the rows in the order the SELECT gives them, so every transaction that takes several
// tenants' rows takes them in the same order, and two of them cannot deadlock. A tenant's first command
// creates its row in the same statement. The ceiling holds as above: concurrent batches of one tenant queue
// on its guard row's lock, and under READ COMMITTED, ON CONFLICT DO UPDATE always updates the latest version
// of the row (after waiting for its lock), so least(new commands, ceiling - undelivered) is computed from the
// count the batch before it committed. `last_batch_taken` and 23505 as above.
const TAKE_SLOTS_SQL = prepared(`
WITH batch AS (
  SELECT b.tenant_id, b.command_id, b.device_id, b.fingerprint, b.n
  FROM unnest($1::text[], $2::text[], $3::text[], $7::text[]) WITH ORDINALITY AS b(tenant_id, command_id, device_id, fingerprint, n)
),
earlier AS (
  SELECT c.tenant_id, c.command_id, c.undelivered_at_enqueue, c.ceiling_at_enqueue, c.status, c.fingerprint, c.device_id
  FROM gl_commands c JOIN batch ON batch.tenant_id = c.tenant_id AND batch.command_id = c.command_id
),
fresh AS (
  SELECT batch.tenant_id, batch.command_id, batch.device_id, batch.fingerprint, row_number() OVER (PARTITION BY batch.tenant_id ORDER BY batch.n) AS k
  FROM batch
  WHERE NOT EXISTS (SELECT 1 FROM earlier WHERE earlier.tenant_id = batch.tenant_id AND earlier.command_id = batch.command_id)
),
wanted AS (
  SELECT t.tenant_id, t.ceiling, (SELECT count(*) FROM fresh WHERE fresh.tenant_id = t.tenant_id)::integer AS wanted
  FROM unnest($4::text[], $5::integer[]) AS t(tenant_id, ceiling)
),
slots AS (
  INSERT INTO gl_command_backlog_guard AS g (tenant_id, undelivered, last_batch_taken)
  SELECT tenant_id, least(wanted, greatest(ceiling, 0)), least(wanted, greatest(ceiling, 0)) FROM wanted ORDER BY tenant_id
  ON CONFLICT (tenant_id) DO UPDATE SET
    undelivered = g.undelivered + least(
      (SELECT w.wanted FROM wanted w WHERE w.tenant_id = g.tenant_id),
      greatest((SELECT w.ceiling FROM wanted w WHERE w.tenant_id = g.tenant_id) - g.undelivered, 0)),
    last_batch_taken = least(
      (SELECT w.wanted FROM wanted w WHERE w.tenant_id = g.tenant_id),
      greatest((SELECT w.ceiling FROM wanted w WHERE w.tenant_id = g.tenant_id) - g.undelivered, 0))
  RETURNING g.tenant_id, g.undelivered, g.last_batch_taken AS taken, g.last_delivered_at, g.delivery_interval_ms_ewma
),
queued AS (
  INSERT INTO gl_commands (tenant_id, command_id, device_id, fingerprint, status, enqueued_at, undelivered_at_enqueue, ceiling_at_enqueue)
  SELECT fresh.tenant_id, fresh.command_id, fresh.device_id, fresh.fingerprint, 'queued', $6, slots.undelivered - slots.taken + fresh.k, wanted.ceiling
  FROM fresh
  JOIN slots ON slots.tenant_id = fresh.tenant_id
  JOIN wanted ON wanted.tenant_id = fresh.tenant_id
  WHERE fresh.k <= slots.taken
  RETURNING 1
)
SELECT slots.tenant_id, slots.undelivered, slots.taken, slots.last_delivered_at, slots.delivery_interval_ms_ewma,
  (SELECT json_agg(json_build_object('command_id', command_id, 'undelivered', undelivered_at_enqueue, 'ceiling', ceiling_at_enqueue,
     'status', status, 'fingerprint', fingerprint, 'device_id', device_id))
   FROM earlier WHERE earlier.tenant_id = slots.tenant_id) AS earlier,
  (SELECT count(*) FROM queued) AS queued
FROM slots`);

/**
 * Decides a batch of one or more tenants' new commands against their ceilings and queues the accepted ones,
 * in the caller's transaction (one statement; more only for a lone tenant's first command, or when something
 * was refused). The guard rows' locks are held until that transaction ends, so the caller appends the ledger
 * events and commits promptly. Returns, per request, one decision per command, in order. Each tenant must
 * appear once.
 */
export async function takeBacklogSlots(tx: Tx, requests: readonly SlotRequest[], enqueuedAt: Date): Promise<SlotDecision[][]> {
  if (requests.length === 0) return [];
  const rows = requests.length === 1 ? [await takeTenantSlots(tx, requests[0]!, enqueuedAt)] : await takeSlotsOfTenants(tx, requests, enqueuedAt);
  const rowOf = new Map(rows.map((row) => [row.tenant_id, row]));
  const decisions = requests.map((request) => {
    const row = rowOf.get(request.tenantId);
    if (!row) throw new Error(`the slot statement returned no guard row for tenant ${request.tenantId}`);
    const earlier = new Map((row.earlier ?? []).map((each) => [each.command_id, each]));
    const pace: DeliveryPace = { lastDeliveredAt: row.last_delivered_at, deliveryIntervalMsEwma: row.delivery_interval_ms_ewma };
    const before = row.undelivered - row.taken;
    let fresh = 0;
    return request.commands.map((command): SlotDecision => {
      const first = earlier.get(command.commandId);
      if (first) return decideRepeat(earlierCommand(first), command);
      fresh++;
      return fresh <= row.taken ? { kind: 'taken', undelivered: before + fresh } : { kind: 'full', undelivered: row.undelivered, pace };
    });
  });
  return answerAcceptedMeanwhile(tx, requests, decisions);
}

async function takeTenantSlots(tx: Tx, { tenantId, ceiling, commands }: SlotRequest, enqueuedAt: Date): Promise<TakeRow> {
  const params = [tenantId, commands.map((c) => c.commandId), commands.map((c) => c.deviceId), ceiling, enqueuedAt, commands.map((c) => c.fingerprint)];
  const found = (await tx.query<TakeRow>(TAKE_TENANT_SLOTS_SQL, params)).rows[0];
  if (found) return found;
  // The tenant's first command: create its guard row, then decide.
  await tx.query('INSERT INTO gl_command_backlog_guard (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING', [tenantId]);
  return (await tx.query<TakeRow>(TAKE_TENANT_SLOTS_SQL, params)).rows[0]!;
}

async function takeSlotsOfTenants(tx: Tx, requests: readonly SlotRequest[], enqueuedAt: Date): Promise<TakeRow[]> {
  const tenantOf: string[] = [];
  const commandIds: string[] = [];
  const deviceIds: string[] = [];
  const fingerprints: string[] = [];
  for (const request of requests) {
    for (const command of request.commands) {
      tenantOf.push(request.tenantId);
      commandIds.push(command.commandId);
      deviceIds.push(command.deviceId);
      fingerprints.push(command.fingerprint);
    }
  }
  const { rows } = await tx.query<TakeRow>(TAKE_SLOTS_SQL, [
    tenantOf,
    commandIds,
    deviceIds,
    requests.map((request) => request.tenantId),
    requests.map((request) => request.ceiling),
    enqueuedAt,
    fingerprints,
  ]);
  return rows;
}

/**
 * The statement looked for earlier acceptances in its snapshot, taken before it waited for the guard rows.
 * A concurrent batch that accepted one of our ids and committed while we waited is not in it: taking a slot
 * for such an id fails on the primary key (and is retried), but an id that got no slot would be refused
 * although it is queued. Now that we hold the guard rows no one else can accept for these tenants, and a new
 * statement sees every acceptance committed before: those ids are answered as duplicates.
 */
async function answerAcceptedMeanwhile(tx: Tx, requests: readonly SlotRequest[], decisions: SlotDecision[][]): Promise<SlotDecision[][]> {
  const refusedTenants: string[] = [];
  const refusedIds: string[] = [];
  requests.forEach((request, r) =>
    request.commands.forEach((command, i) => {
      if (decisions[r]![i]!.kind !== 'full') return;
      refusedTenants.push(request.tenantId);
      refusedIds.push(command.commandId);
    }),
  );
  if (refusedIds.length === 0) return decisions;
  const { rows } = await tx.query<EarlierRow & { tenant_id: string }>(
    `SELECT c.tenant_id, c.command_id, c.undelivered_at_enqueue AS undelivered, c.ceiling_at_enqueue AS ceiling, c.status, c.fingerprint, c.device_id
     FROM gl_commands c JOIN unnest($1::text[], $2::text[]) AS r(tenant_id, command_id)
       ON c.tenant_id = r.tenant_id AND c.command_id = r.command_id`,
    [refusedTenants, refusedIds],
  );
  if (rows.length === 0) return decisions;
  const accepted = new Map(rows.map((each) => [`${each.tenant_id.length}:${each.tenant_id}${each.command_id}`, each]));
  return requests.map((request, r) =>
    decisions[r]!.map((decision, i) => {
      const key = `${request.tenantId.length}:${request.tenantId}${request.commands[i]!.commandId}`;
      const meanwhile = decision.kind === 'full' ? accepted.get(key) : undefined;
      return meanwhile ? decideRepeat(earlierCommand(meanwhile), request.commands[i]!) : decision;
    }),
  );
}

function earlierCommand(row: EarlierRow) {
  return { status: row.status, fingerprint: row.fingerprint, deviceId: row.device_id, undeliveredAtEnqueue: row.undelivered, ceilingAtEnqueue: row.ceiling };
}
