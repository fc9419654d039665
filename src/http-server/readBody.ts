// Reads a request body up to a byte cap. A declared Content-Length over the cap is refused before a byte is
// read; a body without one (chunked) is counted as it streams and refused the moment it passes the cap, so a
// sender can never make us buffer more than the cap.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HeaderPairs } from './respond.ts';

export type BodyRead = { status: 'read'; body: Buffer } | { status: 'too-large' };

/** True when the request declares a body longer than the cap: answer 413 without reading it. */
export function declaresTooLarge(req: IncomingMessage, maxBytes: number): boolean {
  const declared = req.headers['content-length'];
  return declared !== undefined && Number(declared) > maxBytes;
}

export function readBodyCapped(req: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  return new Promise((resolve, reject) =>
    readBodyInto(req, maxBytes, {
      bodyRead: (body) => resolve({ status: 'read', body }),
      bodyTooLarge: () => resolve({ status: 'too-large' }),
      bodyFailed: reject,
    }),
  );
}

/** Where readBodyInto hands the outcome: exactly one of these is called, once. */
export interface BodyReceiver {
  bodyRead(body: Buffer): void;
  /** The body passed the cap; the rest is not read (see closeAfterRefusal). */
  bodyTooLarge(): void;
  /** The request failed while its body was read (the client went away). */
  bodyFailed(error: Error): void;
}

/**
 * readBodyCapped without a promise: the outcome goes to the receiver from the request's own events, so a door
 * that answers at once from there spends no turn of the microtask queue on the body.
 */
export function readBodyInto(req: IncomingMessage, maxBytes: number, receiver: BodyReceiver): void {
  new CappedBodyReader(req, maxBytes, receiver).start();
}

// A class with bound methods rather than closures: this runs on every request, and named closures made per
// call are measurably slower under tsx (it keeps function names with a helper call per closure).
class CappedBodyReader {
  /** The body's first chunk; nearly every body arrives in one, and needs no list. */
  private first: Buffer | null = null;
  private rest: Buffer[] | null = null;
  private bytes = 0;
  private readonly onData = this.data.bind(this);
  private readonly onEnd = this.end.bind(this);
  private readonly onError = this.error.bind(this);

  constructor(
    private readonly req: IncomingMessage,
    private readonly maxBytes: number,
    private readonly receiver: BodyReceiver,
  ) {}

  start(): void {
    this.req.on('data', this.onData).on('end', this.onEnd).on('error', this.onError);
  }

  private data(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.stop();
      this.receiver.bodyTooLarge();
      return;
    }
    if (this.first === null) this.first = chunk;
    else (this.rest ??= []).push(chunk);
  }

  private end(): void {
    const first = this.first ?? EMPTY;
    const body = this.rest === null ? first : Buffer.concat([first, ...this.rest], this.bytes);
    this.stop();
    this.receiver.bodyRead(body);
  }

  private error(error: Error): void {
    this.stop();
    this.receiver.bodyFailed(error);
  }

  private stop(): void {
    this.req.off('data', this.onData).off('end', this.onEnd).off('error', this.onError);
    this.first = null;
    this.rest = null;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * After a 413 the rest of the body is discarded, not stored, and the connection is closed: closing a socket
 * with unread bytes makes TCP send a reset that can destroy our 413 before the sender reads it, so we linger
 * briefly, then cut off a sender that keeps streaming.
 */
export function closeAfterRefusal(req: IncomingMessage, res: ServerResponse, headers: HeaderPairs, lingerMs = 2_000): void {
  headers.push('Connection', 'close');
  req.resume();
  res.once('finish', () => setTimeout(() => req.socket.destroy(), lingerMs).unref());
}
