// An open transaction on a connection of its own that has taken a transaction id and writes nothing to the
// ledger. While it lasts, PostgreSQL holds back every event committed after it began (the snapshot's xmin is
// server-wide), as another service's or another test file's transaction would. PostgreSQL only.
import type { TestDb } from './databases.ts';

export interface OlderTransaction {
  /** Commits it and closes its connection; calling again waits for the same end. */
  end(): Promise<void>;
}

/** Resolves once the transaction holds its id. */
export async function holdOlderTransaction(testDb: TestDb): Promise<OlderTransaction> {
  if (!testDb.connectAgain) throw new Error('an older transaction needs a second connection (PostgreSQL)');
  const connection = testDb.connectAgain({ max: 1 });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const isHolding = new Promise<void>((resolve) => (holding = resolve));
  const held = connection.transaction(async (tx) => {
    await tx.query('SELECT pg_current_xact_id()');
    holding();
    await released;
  });
  await Promise.race([isHolding, held]);
  let ended: Promise<void> | undefined;
  return {
    end: () =>
      (ended ??= (async () => {
        release();
        try {
          await held;
        } finally {
          await connection.close();
        }
      })()),
  };
}
