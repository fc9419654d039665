// How the serving process ends. SIGTERM and SIGINT close the listener and the service, which flushes every
// decision the Governor holds to the ledger, and exit 0. An uncaught exception or an unhandled rejection is
// logged, then the same close flushes what can be flushed, and the process exits 1: the state after an
// unexpected throw is not trusted to serve on. A close that hangs (the database is away) is cut off after
// `shutdownTimeoutMs`, and a second signal exits at once. On SIGKILL nothing runs: what is lost is bounded by
// the Governor's flush interval (see docs/faults.md).
import type { Server } from 'node:http';
import type { Logger } from './logger.ts';

export interface ProcessLifecycleOptions {
  logger: Logger;
  server: Server;
  service: { close(): Promise<void> };
  /** How long a close may take before the process exits without it (default 15 s). */
  shutdownTimeoutMs?: number;
  /** process.exit, replaceable for tests. */
  exit?: (code: number) => void;
}

export function endProcessOnSignalsAndCrashes({
  logger,
  server,
  service,
  shutdownTimeoutMs = 15_000,
  exit = (code) => process.exit(code),
}: ProcessLifecycleOptions): void {
  let stopping = false;

  const stop = (reason: string, exitCode: number) => {
    if (stopping) {
      // A second signal while closing: the operator wants out now.
      if (reason === 'SIGINT' || reason === 'SIGTERM') {
        logger.warn({ signal: reason }, 'second signal while shutting down: exiting without waiting');
        exit(exitCode === 0 ? 1 : exitCode);
      }
      return;
    }
    stopping = true;
    logger.info({ reason }, 'shutting down: flushing the ledger');
    const timer = setTimeout(() => {
      logger.error({ reason, shutdownTimeoutMs }, 'shutdown did not finish in time; exiting with what was not flushed lost');
      exit(exitCode === 0 ? 1 : exitCode);
    }, shutdownTimeoutMs);
    timer.unref();
    server.close();
    server.closeAllConnections();
    service.close().then(
      () => {
        clearTimeout(timer);
        logger.info({ reason }, 'shut down');
        exit(exitCode);
      },
      (error: unknown) => {
        clearTimeout(timer);
        logger.error({ err: error, reason }, 'shutdown failed');
        exit(exitCode === 0 ? 1 : exitCode);
      },
    );
  };

  process.on('SIGINT', () => stop('SIGINT', 0));
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('uncaughtException', (error, origin) => {
    logger.fatal({ err: error, origin }, 'uncaught exception: flushing what can be flushed, then exiting');
    stop(origin, 1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection: flushing what can be flushed, then exiting');
    stop('unhandledRejection', 1);
  });
}
