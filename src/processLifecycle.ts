// How the serving process ends.
//
// SIGTERM (what Kubernetes, Docker and process managers send) drains first: /readyz answers 503 for
// `drainMs` while every other request is still served, so a load balancer's health check takes the replica
// out before it stops accepting. Then the listener closes: in-flight requests finish (their answers say
// `Connection: close`), idle keep-alive connections close, and what is still open after `requestGraceMs` is
// cut (src/http-server/shutdown.ts). Then the service closes, which flushes every decision the Governor holds
// to the ledger and closes Redis, NATS and the database, and the process exits 0. SIGINT (Ctrl-C at a
// terminal) does the same without the drain delay: nobody balances load onto a terminal.
//
// An uncaught exception or an unhandled rejection is logged, then the listener and the service close at once
// (no drain: the state after an unexpected throw is not trusted to serve on), flushing what can be flushed, and
// the process exits 1. A close that hangs (the database is away) is cut off `shutdownTimeoutMs` after the
// listener closed, and a second signal exits at once. On SIGKILL nothing runs: what is lost is bounded by the
// Governor's flush interval (see docs/faults.md).
import type { Server } from 'node:http';
import type { Logger } from './logger.ts';
import { startDraining, stopServing } from './http-server/shutdown.ts';

export interface ProcessLifecycleOptions {
  logger: Logger;
  server: Server;
  /** `clean`: the stop was asked for (a signal), not forced by a crash. */
  service: { close(options?: { clean?: boolean }): Promise<void> };
  /** How long /readyz answers 503 before the listener closes on SIGTERM (GOVERNANCE_DRAIN_SECONDS; default 0). */
  drainMs?: number;
  /** How long in-flight requests may take once the listener closed before their connections are cut (default 3 s). */
  requestGraceMs?: number;
  /** How long the service's close may take before the process exits without it (default 15 s). */
  shutdownTimeoutMs?: number;
  /** process.exit, replaceable for tests. */
  exit?: (code: number) => void;
}

export function endProcessOnSignalsAndCrashes({
  logger,
  server,
  service,
  drainMs = 0,
  requestGraceMs = 3_000,
  shutdownTimeoutMs = 15_000,
  exit = (code) => process.exit(code),
}: ProcessLifecycleOptions): void {
  let stopping = false;

  const close = async (reason: string, exitCode: number, drain: boolean) => {
    if (drain && drainMs > 0) {
      startDraining(server);
      logger.info({ reason, drainSeconds: drainMs / 1000 }, 'draining: /readyz answers 503 while requests are still served');
      await new Promise((resolve) => setTimeout(resolve, drainMs));
    }
    logger.info({ reason }, 'shutting down: closing the listener, then flushing the ledger');
    const timer = setTimeout(() => {
      logger.error({ reason, shutdownTimeoutMs }, 'shutdown did not finish in time; exiting with what was not flushed lost');
      exit(exitCode === 0 ? 1 : exitCode);
    }, shutdownTimeoutMs);
    timer.unref();
    try {
      const { cut } = await stopServing(server, { graceMs: exitCode === 0 ? requestGraceMs : 0 });
      if (cut) logger.warn({ requestGraceMs }, 'requests still open after the grace period were cut');
      await service.close({ clean: exitCode === 0 });
      clearTimeout(timer);
      logger.info({ reason }, 'shut down');
      exit(exitCode);
    } catch (error) {
      clearTimeout(timer);
      logger.error({ err: error, reason }, 'shutdown failed');
      exit(exitCode === 0 ? 1 : exitCode);
    }
  };

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
    void close(reason, exitCode, reason === 'SIGTERM');
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
