import pg from 'pg';
import type { Db, QueryResult, Tx } from './db.ts';
import { preparedName } from './preparedStatements.ts';
import { isConnectionFault, StorageUnavailable } from './storageUnavailable.ts';
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
  /** Told of every connection the server dropped or refused (the work on it failed with StorageUnavailable). */
  onConnectionError?: (error: unknown) => void;
  /** A query not answered within this fails and its connection is discarded (default QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
}

/**
 * A query not answered within this fails (StorageUnavailable) and its connection is discarded. A server cut off
 * by the network refuses nothing: without it a query sent into the cut would wait for TCP to give up (many
 * minutes). Scripts (`exec`: migrations) have no such limit.
 */
export const QUERY_TIMEOUT_MS = 30_000;
/** What `exec` passes instead: pg reads 0 as "use the pool's", so the longest timer Node.js keeps. */
const NO_TIMEOUT_MS = 2 ** 31 - 1;

/** A LISTEN whose connection was lost is re-established after this, doubling per failed try up to the cap. */
const LISTEN_RETRY_MS = { first: 100, max: 2_000 };

/**
 * PostgreSQL through a `pg` pool.
 *
 * The server may drop any connection at any time (pg_terminate_backend, a restart, a failover). A `pg`
 * client whose connection drops emits 'error', and an 'error' nobody listens to ends the process, so every
 * client gets a listener when it connects, checked out or idle. The work on a lost connection fails with
 * StorageUnavailable; the pool discards the broken client and connects a new one for the next caller.
 */
export function openPostgres(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    types,
    // A server that does not answer at all (a failover in progress) must not hold callers for ever.
    connectionTimeoutMillis: 10_000,
    query_timeout: options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    keepAlive: true,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  const reportLost = (error: unknown) => options.onConnectionError?.(error);
  // An idle client that loses its server emits 'error' on the pool; a checked-out one on itself.
  pool.on('error', reportLost);
  pool.on('connect', (client) => client.on('error', reportLost));

  const unavailable = (error: unknown) => (isConnectionFault(error) && !(error instanceof StorageUnavailable) ? new StorageUnavailable(error) : error);

  const run = async <Row>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[], script = false) => {
    try {
      const name = preparedName(sql);
      const values = params as unknown[] | undefined;
      const result = await (script
        ? client.query({ text: sql, query_timeout: NO_TIMEOUT_MS } as pg.QueryConfig)
        : name === undefined
          ? client.query(sql, values)
          : client.query({ name, text: sql, values }));
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 } satisfies QueryResult<Row>;
    } catch (error) {
      throw unavailable(error);
    }
  };

  const connect = async () => {
    try {
      return await pool.connect();
    } catch (error) {
      throw unavailable(error);
    }
  };

  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    exec: async (sql) => {
      await run(pool, sql, undefined, true);
    },
    async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
      const client = await connect();
      let broken: Error | undefined;
      try {
        await run(client, 'BEGIN');
        const result = await work({
          query: (sql, params) => run(client, sql, params),
          exec: async (sql) => {
            await run(client, sql, undefined, true);
          },
        });
        await run(client, 'COMMIT');
        return result;
      } catch (error) {
        // A statement that timed out is still the connection's active one: a ROLLBACK would wait behind it.
        if (error instanceof StorageUnavailable && String(error.cause).includes('Query read timeout')) {
          broken = error;
          throw error;
        }
        await client.query('ROLLBACK').catch((rollbackFailed: unknown) => {
          // The connection is gone or unusable: it must not go back to the pool.
          broken = rollbackFailed instanceof Error ? rollbackFailed : new Error(String(rollbackFailed));
        });
        throw unavailable(error);
      } finally {
        client.release(broken);
      }
    },
    listen: (channel, onNotify) => listenSurvivingReconnects(connect, channel, onNotify, reportLost),
    close: () => pool.end(),
  };
}

/**
 * LISTEN on a connection of its own. When that connection is lost, it is connected again (backing off while
 * the server is away) and, once listening again, `onNotify` is called once: a NOTIFY sent while nobody was
 * listening is lost, so the subscriber must read rather than wait for the next one.
 */
async function listenSurvivingReconnects(
  connect: () => Promise<pg.PoolClient>,
  channel: string,
  onNotify: (payload: string) => void,
  reportLost: (error: unknown) => void,
): Promise<() => Promise<void>> {
  const statement = `LISTEN ${quoteIdent(channel)}`;
  let current: pg.PoolClient | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delayMs = LISTEN_RETRY_MS.first;

  const handler = (message: pg.Notification) => {
    if (message.channel === channel) onNotify(message.payload ?? '');
  };

  const open = async (): Promise<pg.PoolClient> => {
    const client = await connect();
    const lost = (error: unknown) => {
      client.off('notification', handler);
      client.off('error', lost);
      if (current !== client) return;
      current = undefined;
      reportLost(error);
      client.release(error instanceof Error ? error : new Error(String(error)));
      scheduleReconnect();
    };
    client.on('error', lost);
    client.on('notification', handler);
    try {
      await client.query(statement);
    } catch (error) {
      client.off('notification', handler);
      client.off('error', lost);
      client.release(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    return client;
  };

  const scheduleReconnect = () => {
    if (closed) return;
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => void reconnect(), delayMs);
    delayMs = Math.min(delayMs * 2, LISTEN_RETRY_MS.max);
  };

  const reconnect = async () => {
    if (closed) return;
    try {
      const client = await open();
      if (closed) {
        client.off('notification', handler);
        client.release();
        return;
      }
      current = client;
      delayMs = LISTEN_RETRY_MS.first;
      onNotify('');
    } catch (error) {
      reportLost(error);
      scheduleReconnect();
    }
  };

  current = await open();
  return async () => {
    closed = true;
    clearTimeout(retryTimer);
    const client = current;
    current = undefined;
    if (!client) return;
    client.off('notification', handler);
    await client.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
    client.release();
  };
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
