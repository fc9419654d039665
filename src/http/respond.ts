import type { ServerResponse } from 'node:http';

/** Every ingest answer is a small JSON object; the request ID is set on `res` before this is called. */
export function sendJson(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
