// How the HTTP listener ends without failing a request a client or a load balancer already sent.
//
// Draining comes first: /readyz answers 503 while everything else is served as usual, so a load balancer's
// health check (or Kubernetes' readiness probe) takes the replica out before it stops accepting. Then the
// listener closes: no new connections; a request still being handled finishes and its answer carries
// `Connection: close`; a keep-alive connection with no request on it is closed; whatever is still open after
// the grace period is cut.
//
// Node's own `server.close()` does not do this: it closes the connections idle at that moment and leaves the
// others open, and a keep-alive connection then keeps serving new requests until its keep-alive timeout. The
// answer to an in-flight request is told to close its connection through the response class: its
// `shouldKeepAlive` reads false once the server closes, and Node reads it when it writes the headers, so no
// per-request bookkeeping is needed on the hot path.
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';

interface ShutdownState {
  draining: boolean;
  closing: boolean;
}

const states = new WeakMap<Server, ShutdownState>();

/** Why /readyz answers 503 while the server drains. */
export const DRAINING_REASON = 'draining: the service is shutting down';

/** The response class and the state it reads; `createServer` passes the class to Node and registers the state. */
export function shutdownAwareResponses(): { state: ShutdownState; Response: typeof ServerResponse<IncomingMessage> } {
  const state: ShutdownState = { draining: false, closing: false };
  class Response extends ServerResponse<IncomingMessage> {
    // Not a class field: Node's constructor sets shouldKeepAlive before a subclass's fields would exist.
    declare keepAliveWanted: boolean;
    // @ts-expect-error shouldKeepAlive is a data property in Node's typings; an accessor serves it here.
    override get shouldKeepAlive(): boolean {
      return this.keepAliveWanted && !state.closing;
    }
    override set shouldKeepAlive(value: boolean) {
      this.keepAliveWanted = value;
    }
  }
  return { state, Response };
}

export function registerShutdownState(server: Server, state: ShutdownState): void {
  states.set(server, state);
}

/** Whether /readyz should answer 503 because the server drains. */
export function isDraining(server: Server): boolean {
  return states.get(server)?.draining ?? false;
}

/** /readyz answers 503 from now on; every other route is served as before. */
export function startDraining(server: Server): void {
  const state = states.get(server);
  if (state) state.draining = true;
}

export interface StopServingResult {
  /** Connections were still open when the grace period ended, and were cut. */
  cut: boolean;
}

/**
 * Stops accepting and resolves once every connection has ended: in-flight requests finish (their answers
 * say `Connection: close`), idle keep-alive connections are closed, and after `graceMs` the rest are cut.
 */
export function stopServing(server: Server, { graceMs }: { graceMs: number }): Promise<StopServingResult> {
  const state = states.get(server);
  if (state) {
    state.draining = true;
    state.closing = true;
  }
  return new Promise((resolve) => {
    let cut = false;
    // A request arriving on an open keep-alive connection from now on is answered, then its connection closes.
    const onRequest = (_req: IncomingMessage, res: ServerResponse) => res.setHeader('connection', 'close');
    server.prependListener('request', onRequest);
    // Answers written before the close began kept their connection alive: close each once it falls idle.
    const sweep = setInterval(() => server.closeIdleConnections(), 25);
    const grace = setTimeout(() => {
      cut = true;
      server.closeAllConnections();
    }, graceMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(grace);
      server.off('request', onRequest);
      resolve({ cut });
    });
    server.closeIdleConnections();
  });
}
