import type { Queryable } from '../../db/db.ts';

/**
 * The NOTIFY channel that announces appends, as an SQL expression. It names the schema, so ledgers in
 * different schemas of one server (isolated test schemas) do not wake each other's subscribers.
 * PostgreSQL truncates channel names to 63 bytes; so do we, on both sides.
 */
export const LEDGER_CHANNEL_SQL = `left('gl_events_' || current_schema(), 63)`;

export async function ledgerChannel(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ channel: string }>(`SELECT ${LEDGER_CHANNEL_SQL} AS channel`);
  return rows[0]!.channel;
}
