import type { IncomingMessage, ServerResponse } from 'node:http';
import { storageUnavailableIn } from '../db/storageUnavailable.ts';

/** A readiness check answers null when ready, or the reason it is not. */
export type ReadinessCheck = () => Promise<string | null>;

export function handleHealthz(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
}

/**
 * A check that has not answered within this is reported as not answering: a database cut off by the network
 * refuses nothing, and a load balancer's check must not wait for a query that may never come back.
 */
export const READINESS_CHECK_TIMEOUT_MS = 2_000;

function withinTimeout(check: ReadinessCheck): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`a readiness check did not answer within ${READINESS_CHECK_TIMEOUT_MS / 1000} s`), READINESS_CHECK_TIMEOUT_MS);
  });
  const answer = check();
  return Promise.race([answer, late]).finally(() => {
    clearTimeout(timer);
    answer.catch(() => {});
  });
}

/** 200 when every check passes; 503 with every failing reason otherwise (each reason once). */
export async function handleReadyz(checks: readonly ReadinessCheck[], res: ServerResponse): Promise<void> {
  // A check that could not reach the database (a projection's lag read during an outage) says so in the words
  // of the database check, not with the driver's message.
  const failed = (error: unknown) => (storageUnavailableIn(error) ? 'the database is unavailable' : `check failed: ${String(error)}`);
  const reasons = [
    ...new Set((await Promise.all(checks.map((check) => withinTimeout(check).catch(failed)))).filter((reason): reason is string => reason !== null)),
  ];
  const ready = reasons.length === 0;
  res
    .writeHead(ready ? 200 : 503, { 'content-type': 'application/json' })
    .end(JSON.stringify(ready ? { status: 'ready' } : { status: 'not ready', reasons }));
}
