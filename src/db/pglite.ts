import { PGlite } from '@electric-sql/pglite';
import type { Db, QueryResult, Tx } from './db.ts';
import { INT8_OID, XID8_OID, parseBigint } from './types.ts';
import { quoteIdent } from './postgres.ts';
import { nameSeededLedger, plantPgliteSeed } from './pgliteSeed.ts';

/**
 * Embedded PostgreSQL (PGlite). `dataDir` undefined keeps everything in memory (tests).
 * PGlite is a single connection: transactions are serialised by PGlite itself, which is what a
 * single embedded process wants.
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  // A new database in a directory starts from the build's seed when there is one (see pgliteSeed.ts).
  if (dataDir !== undefined) await plantPgliteSeed(dataDir);
  const db = pgliteDb(await createPglite(dataDir));
  if (dataDir !== undefined) await nameSeededLedger(db, dataDir);
  return db;
}

/**
 * PGlite as this service reads its values: int8 and xid8 as bigint. `loadDataDir`: a database PGlite's
 * dumpDataDir wrote, started from instead of running initdb (into memory when `dataDir` is undefined).
 */
export function createPglite(dataDir?: string, loadDataDir?: Blob): Promise<PGlite> {
  return PGlite.create(dataDir, { parsers: { [INT8_OID]: parseBigint, [XID8_OID]: parseBigint }, ...(loadDataDir ? { loadDataDir } : {}) });
}

/** An open PGlite as the service's Db. */
export function pgliteDb(db: PGlite): Db {
  // PGlite reports affectedRows 0 for a SELECT; a statement that returns columns counts its rows, like pg.
  const toResult = <Row>(result: { rows: unknown[]; fields: unknown[]; affectedRows?: number }): QueryResult<Row> => ({
    rows: result.rows as Row[],
    rowCount: result.fields.length > 0 ? result.rows.length : (result.affectedRows ?? 0),
  });

  return {
    kind: 'pglite',
    query: async (sql, params) => toResult(await db.query(sql, params as unknown[] | undefined)),
    exec: async (sql) => {
      await db.exec(sql);
    },
    transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
      return db.transaction(async (tx) =>
        work({
          query: async (sql, params) => toResult(await tx.query(sql, params as unknown[] | undefined)),
          exec: async (sql) => {
            await tx.exec(sql);
          },
        }),
      );
    },
    async listen(channel, onNotify) {
      const unlisten = await db.listen(quoteIdent(channel), onNotify);
      return async () => {
        await unlisten();
      };
    },
    close: () => db.close(),
  };
}
