import type { ServerResponse } from 'node:http';

/**
 * Response headers as flat name/value pairs, gathered while a request is served and written once with the
 * status: every request takes this path, and one writeHead is cheaper than a setHeader per field.
 */
export type HeaderPairs = string[];

/** Every front-door answer is a small JSON object. */
export function sendJson(res: ServerResponse, status: number, body: Record<string, unknown>, headers: HeaderPairs): void {
  const text = JSON.stringify(body);
  send(res, status, text, Buffer.byteLength(text), headers);
}

/**
 * sendJson for a body already written out as JSON, in ASCII only (its length is its byte length): the answers
 * every request gets (202, 429) are written straight from their few values, without an object to stringify.
 */
export function sendJsonText(res: ServerResponse, status: number, text: string, headers: HeaderPairs): void {
  send(res, status, text, text.length, headers);
}

function send(res: ServerResponse, status: number, text: string, bytes: number, headers: HeaderPairs): void {
  headers.push('Content-Type', 'application/json', 'Content-Length', String(bytes));
  res.writeHead(status, headers);
  res.end(text);
}
