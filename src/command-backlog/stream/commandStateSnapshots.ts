// Storing and restoring a tenant's folded commands state (gl_command_state_snapshots). A snapshot only
// saves folding: it is used when the event at its revision is still the one it was taken after, and a
// snapshot that cannot be read or written costs a longer fold, never a wrong decision.
import type { Queryable } from '../../db/db.ts';
import type { AcceptedCommand, TenantCommandsState } from './foldCommandStream.ts';

export interface CommandStateSnapshot {
  state: TenantCommandsState & { revision: bigint };
  /** The id of the event at `state.revision`. */
  lastEventId: string;
}

/** The JSON form: dates as epoch milliseconds, each command as a tuple (a tenant may hold many). */
interface StoredState {
  undelivered: number;
  lastDeliveredAt: number | null;
  deliveryIntervalMsEwma: number | null;
  // deviceId and fingerprint were added later: a snapshot taken before has neither (see decideRepeat in answers.ts).
  commands: Array<
    [commandId: string, status: AcceptedCommand['status'], enqueuedAtMs: number, undeliveredAtEnqueue: number, ceilingAtEnqueue: number, deviceId?: string | null, fingerprint?: string | null]
  >;
}

const UPSERT_SQL = `
INSERT INTO gl_command_state_snapshots (tenant_id, revision, last_event_id, state, taken_at)
VALUES ($1, $2, $3, $4, now())
ON CONFLICT (tenant_id) DO UPDATE
  SET revision = EXCLUDED.revision, last_event_id = EXCLUDED.last_event_id, state = EXCLUDED.state, taken_at = EXCLUDED.taken_at
  WHERE gl_command_state_snapshots.revision < EXCLUDED.revision`;

/** Saves the state at its revision, unless a snapshot at a later revision is already stored (another process's). */
export async function saveCommandStateSnapshot(db: Queryable, tenantId: string, snapshot: CommandStateSnapshot): Promise<void> {
  const { state } = snapshot;
  const stored: StoredState = {
    undelivered: state.undelivered,
    lastDeliveredAt: state.lastDeliveredAt?.getTime() ?? null,
    deliveryIntervalMsEwma: state.deliveryIntervalMsEwma,
    commands: [...state.commands].map(([id, command]) => [
      id,
      command.status,
      command.enqueuedAt.getTime(),
      command.undeliveredAtEnqueue,
      command.ceilingAtEnqueue,
      command.deviceId,
      command.fingerprint,
    ]),
  };
  await db.query(UPSERT_SQL, [tenantId, state.revision.toString(), snapshot.lastEventId, JSON.stringify(stored)]);
}

export async function loadCommandStateSnapshot(db: Queryable, tenantId: string): Promise<CommandStateSnapshot | undefined> {
  const { rows } = await db.query<{ revision: bigint; last_event_id: string; state: StoredState }>(
    'SELECT revision, last_event_id, state FROM gl_command_state_snapshots WHERE tenant_id = $1',
    [tenantId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const stored = row.state;
  const commands = new Map<string, AcceptedCommand>();
  for (const [id, status, enqueuedAtMs, undeliveredAtEnqueue, ceilingAtEnqueue, deviceId, fingerprint] of stored.commands) {
    // A command from a snapshot older than fingerprints has neither: a repeat of it counts as the same command.
    commands.set(id, { status, enqueuedAt: new Date(enqueuedAtMs), undeliveredAtEnqueue, ceilingAtEnqueue, deviceId: deviceId ?? null, fingerprint: fingerprint ?? null });
  }
  return {
    lastEventId: row.last_event_id,
    state: {
      revision: BigInt(row.revision),
      undelivered: stored.undelivered,
      commands,
      lastDeliveredAt: stored.lastDeliveredAt === null ? null : new Date(stored.lastDeliveredAt),
      deliveryIntervalMsEwma: stored.deliveryIntervalMsEwma,
    },
  };
}

/** Removes the tenant's snapshot if it is still the one taken after `lastEventId` (found not to match the stream). */
export async function discardCommandStateSnapshot(db: Queryable, tenantId: string, lastEventId: string): Promise<void> {
  await db.query('DELETE FROM gl_command_state_snapshots WHERE tenant_id = $1 AND last_event_id = $2', [tenantId, lastEventId]);
}
