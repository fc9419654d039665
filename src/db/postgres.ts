import pg from 'pg';
import type { Db, QueryResult, Tx } from './db.ts';
import { INT8_OID, XID8_OID, parseBigint } from './types.ts';

const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID || oid === XID8_OID) return parseBigint;
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface PostgresOptions {
  connectionString: string;
  /** Schema to put first on the search_path (tests isolate themselves this way). */
  schema?: string;
  max?: number;
}

/** PostgreSQL through a `pg` pool. */
export function openPostgres(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    types,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // An idle client that loses its server emits 'error' on the pool; without a handler that kills the process.
  pool.on('error', () => {});

  const run = async <Row>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) => {
    const result = await client.query(sql, params as unknown[] | undefined);
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 } satisfies QueryResult<Row>;
  };

  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    exec: async (sql) => {
      await pool.query(sql);
    },
    async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work({
          query: (sql, params) => run(client, sql, params),
          exec: async (sql) => {
            await client.query(sql);
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async listen(channel, onNotify) {
      const client = await pool.connect();
      const handler = (message: pg.Notification) => {
        if (message.channel === channel) onNotify(message.payload ?? '');
      };
      client.on('notification', handler);
      await client.query(`LISTEN ${quoteIdent(channel)}`);
      return async () => {
        client.off('notification', handler);
        await client.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
        client.release();
      };
    },
    close: () => pool.end(),
  };
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
