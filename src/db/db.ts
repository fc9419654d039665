// One small interface over `pg` (DATABASE_URL) and PGlite (embedded). Everything that touches SQL goes
// through it, so the ledger, the projections and the read models run unchanged on either.

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Runs a script of one or more statements without parameters (migrations, resets). */
  exec(sql: string): Promise<void>;
}

/** A connection inside a transaction. */
export type Tx = Queryable;

export type DbKind = 'postgres' | 'pglite';

export interface Db extends Queryable {
  readonly kind: DbKind;
  /** Runs `work` in one transaction (READ COMMITTED); commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on `channel`; resolves to an unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** SQLSTATE unique_violation: another writer took the key first. */
export const UNIQUE_VIOLATION = '23505';

/** A database error's SQLSTATE (pg's and PGlite's errors both carry it as `code`), or undefined. */
export function sqlStateOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}
