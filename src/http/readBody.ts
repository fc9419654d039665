// Reads a request body up to a byte cap. A declared Content-Length over the cap is refused before a byte is
// read; a body without one (chunked) is counted as it streams and refused the moment it passes the cap, so a
// sender can never make us buffer more than the cap.
import type { IncomingMessage, ServerResponse } from 'node:http';

export type BodyRead = { status: 'read'; body: Buffer } | { status: 'too-large' };

/** True when the request declares a body longer than the cap: answer 413 without reading it. */
export function declaresTooLarge(req: IncomingMessage, maxBytes: number): boolean {
  const declared = req.headers['content-length'];
  return declared !== undefined && Number(declared) > maxBytes;
}

export function readBodyCapped(req: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        stop();
        resolve({ status: 'too-large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
      stop();
      resolve({ status: 'read', body });
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    const stop = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
      chunks.length = 0;
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/**
 * After a 413 the rest of the body is discarded, not stored, and the connection is closed: closing a socket
 * with unread bytes makes TCP send a reset that can destroy our 413 before the sender reads it, so we linger
 * briefly, then cut off a sender that keeps streaming.
 */
export function closeAfterRefusal(req: IncomingMessage, res: ServerResponse, lingerMs = 2_000): void {
  res.setHeader('Connection', 'close');
  req.resume();
  res.once('finish', () => setTimeout(() => req.socket.destroy(), lingerMs).unref());
}
