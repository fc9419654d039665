import type { Db, Queryable } from '../../db/db.ts';

/** Wakes subscribers when an append commits, through one LISTEN shared by every subscriber of a store. */
export interface AppendSignal {
  /** Calls `onAppend` after each committed append from now on; resolves to a function that stops it. */
  listen(onAppend: () => void): Promise<() => void>;
  close(): Promise<void>;
}

export function createAppendSignal(db: Db): AppendSignal {
  const listeners = new Set<() => void>();
  let listening: Promise<(() => Promise<void>) | undefined> | undefined;

  const startListening = async () => {
    try {
      return await db.listen(await ledgerChannel(db), () => listeners.forEach((listener) => listener()));
    } catch {
      // Subscribers still poll; the next subscriber tries LISTEN again.
      listening = undefined;
      return undefined;
    }
  };

  return {
    async listen(onAppend) {
      listeners.add(onAppend);
      listening ??= startListening();
      await listening;
      return () => listeners.delete(onAppend);
    },
    async close() {
      listeners.clear();
      const unlisten = await listening;
      listening = undefined;
      await unlisten?.();
    },
  };
}

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
