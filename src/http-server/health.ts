import type { IncomingMessage, ServerResponse } from 'node:http';
import { storageUnavailableIn } from '../db/storageUnavailable.ts';

/** A readiness check answers null when ready, or the reason it is not. */
export type ReadinessCheck = () => Promise<string | null>;

export function handleHealthz(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
}

/** 200 when every check passes; 503 with every failing reason otherwise (each reason once). */
export async function handleReadyz(checks: readonly ReadinessCheck[], res: ServerResponse): Promise<void> {
  // A check that could not reach the database (a projection's lag read during an outage) says so in the words
  // of the database check, not with the driver's message.
  const failed = (error: unknown) => (storageUnavailableIn(error) ? 'the database is unavailable' : `check failed: ${String(error)}`);
  const reasons = [
    ...new Set((await Promise.all(checks.map((check) => check().catch(failed)))).filter((reason): reason is string => reason !== null)),
  ];
  const ready = reasons.length === 0;
  res
    .writeHead(ready ? 200 : 503, { 'content-type': 'application/json' })
    .end(JSON.stringify(ready ? { status: 'ready' } : { status: 'not ready', reasons }));
}
