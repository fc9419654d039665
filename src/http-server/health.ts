import type { IncomingMessage, ServerResponse } from 'node:http';

/** A readiness check answers null when ready, or the reason it is not. */
export type ReadinessCheck = () => Promise<string | null>;

export function handleHealthz(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
}

/** 200 when every check passes; 503 with every failing reason otherwise. */
export async function handleReadyz(checks: readonly ReadinessCheck[], res: ServerResponse): Promise<void> {
  const reasons = (
    await Promise.all(checks.map((check) => check().catch((error: unknown) => `check failed: ${String(error)}`)))
  ).filter((reason): reason is string => reason !== null);
  const ready = reasons.length === 0;
  res
    .writeHead(ready ? 200 : 503, { 'content-type': 'application/json' })
    .end(JSON.stringify(ready ? { status: 'ready' } : { status: 'not ready', reasons }));
}
