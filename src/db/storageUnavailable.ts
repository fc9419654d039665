// The database is away (its connection was terminated, it is restarting, a failover is under way): the work
// failed and may succeed if tried again. The database adapter turns such faults into this one type so the
// layers above tell "retry later" (HTTP 503 with Retry-After, GraphQL SERVICE_UNAVAILABLE) apart from a bug,
// without knowing the driver's error codes.

export class StorageUnavailable extends Error {
  override readonly name = 'StorageUnavailable';
  /** What a client is told to wait before retrying. */
  readonly retryAfterSeconds = 1;
  constructor(cause: unknown) {
    super(`the database is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

// SQLSTATE classes and codes that mean the connection or the server went away, not that the statement was wrong:
// 08 connection exception; 57P01 admin shutdown (pg_terminate_backend, a fast shutdown); 57P02 crash shutdown;
// 57P03 cannot connect now (starting up, in recovery); 53300 too many connections; 25006 read-only transaction
// (the server is a standby: a failover is under way and the connection reached the replica before its promotion).
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300', '25006']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
// node-postgres reports a lost or refused connection by message only.
const DRIVER_MESSAGES = [
  'Connection terminated',
  'connection error and is not queryable',
  'timeout exceeded when trying to connect',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
  // The pool's query_timeout: the server did not answer (a network cut); the connection is discarded.
  'Query read timeout',
];

/** Whether `error` says the database could not be reached or dropped the connection. */
export function isConnectionFault(error: unknown): boolean {
  if (error instanceof StorageUnavailable) return true;
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || SERVER_CODES.has(code) || SOCKET_CODES.has(code))) return true;
  const message = (error as { message?: unknown }).message;
  if (typeof message === 'string' && DRIVER_MESSAGES.some((text) => message.includes(text))) return true;
  // AggregateError (a connect that tried several addresses) and errors wrapping a cause.
  const errors = (error as { errors?: unknown }).errors;
  if (Array.isArray(errors) && errors.length > 0 && errors.every(isConnectionFault)) return true;
  return false;
}

/** The StorageUnavailable in `error` or its causes, if any (errors get wrapped on their way up). */
export function storageUnavailableIn(error: unknown): StorageUnavailable | undefined {
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 8; depth++) {
    if (at instanceof StorageUnavailable) return at;
    at = (at as { cause?: unknown; originalError?: unknown }).originalError ?? (at as { cause?: unknown }).cause;
  }
  return undefined;
}
