// The one HTTP listener: health, metrics, GraphQL and the ingest front door share a port.
//
// Nothing a client sends may end the process or reach it as a stack trace: a request target or Host that
// is not a URL, a request Node cannot parse as HTTP, and a handler that throws (at once or later) are each
// answered here with a small JSON body, and only the log sees the fault.
import { createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DEFAULT_REQUEST_TIMEOUT_SECONDS } from '../config.ts';
import { storageUnavailableIn } from '../db/storageUnavailable.ts';
import type { Logger } from '../logger.ts';
import { handleHealthz, handleReadyz, type ReadinessCheck } from './health.ts';
import type { RequestTarget, Route, RouteFault } from './route.ts';
import { TurnBudget } from './turnBudget.ts';
import { DRAINING_REASON, isDraining, registerShutdownState } from './shutdown.ts';

/**
 * How often Node looks for requests past their timeout (its default, 30 s, would let a request that declared a
 * body it never sends hold its connection for half a minute past the timeout). Node times a request out once
 * it is older than its limit at a check, so the limit is set REQUEST_TIMEOUT_MARGIN_MS short of
 * GOVERNANCE_REQUEST_TIMEOUT_SECONDS: one check's wait, and the rest for an event loop that runs the check late.
 */
export const REQUEST_TIMEOUT_CHECK_MS = 100;

/**
 * How much sooner than the setting Node is told to time a request out: a check's wait (100 ms) plus 400 ms for an
 * event loop that runs the check late (a major collection, a burst of work in the same thread). With a 250 ms
 * check and 500 ms in all, a stall of 280 ms made a 408 arrive after 10,028 ms against the 10 s promise.
 */
export const REQUEST_TIMEOUT_MARGIN_MS = 500;

/**
 * Needs only a logger and the readiness checks, so a door can be served without a whole service; the request
 * timeout is the service's setting when it has one, else the setting's default. `turns`: the budget of a turn
 * of the event loop its requests share (turnBudget.ts; one of its own unless given, e.g. to be reported).
 */
export function createServer(
  service: { logger: Logger; readiness: readonly ReadinessCheck[]; settings?: { requestTimeoutSeconds: number }; turns?: TurnBudget },
  routes: readonly Route[],
): Server {
  // The server is told to drain and close through src/http-server/shutdown.ts; the readiness route reads it.
  const draining: ReadinessCheck = async () => (isDraining(server) ? DRAINING_REASON : null);
  const healthz: Route = { path: '/healthz', handle: handleHealthz };
  const readyz: Route = { path: '/readyz', handle: (_req, res) => handleReadyz([draining, ...service.readiness], res) };
  const table: Route[] = [healthz, readyz, ...routes];
  const turns = service.turns ?? new TurnBudget();
  const failed = (res: ServerResponse, error: unknown, path: string | undefined = pathOf(res)) => {
    const unavailable = storageUnavailableIn(error);
    if (unavailable) service.logger.warn({ err: error, path }, 'request failed: the database is unavailable');
    else service.logger.error({ err: error, path }, 'request failed');
    if (res.headersSent) {
      // Half an answer is already on the wire: the client can only learn of the fault by the connection ending.
      res.destroy();
      return;
    }
    // The database is away: the request may succeed later, and the client is told when to try again.
    if (unavailable) sendError(res, 503, 'the database is unavailable; retry', { 'retry-after': String(unavailable.retryAfterSeconds) });
    else sendError(res, 500, 'internal error');
  };
  // Handed to every route: a handler's callbacks report faults through it (the path comes from the request).
  const fault: RouteFault = (res, error) => failed(res, error);
  // Headers and body together must arrive within the timeout (slowloris, or a body declared and never sent):
  // Node answers 408 through clientError below, within GOVERNANCE_REQUEST_TIMEOUT_SECONDS, and closes the connection.
  const requestTimeoutMs = Math.max(REQUEST_TIMEOUT_CHECK_MS, (service.settings?.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS) * 1000 - REQUEST_TIMEOUT_MARGIN_MS);
  const timeouts = { requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs, connectionsCheckingInterval: REQUEST_TIMEOUT_CHECK_MS };
  const handle = (req: IncomingMessage, res: ServerResponse, route: Route, target: RequestTarget) => {
    try {
      const handled = route.handle(req, res, target, fault);
      // A handler that answers from callbacks returns nothing, and costs no promise here.
      if (handled !== undefined) Promise.resolve(handled).catch((error: unknown) => failed(res, error, target.pathname));
    } catch (error) {
      failed(res, error, target.pathname);
    }
  };
  const server = createHttpServer(timeouts, (req, res) => {
    let path: string | undefined;
    try {
      const target = requestTarget(req);
      if (typeof target === 'string') {
        sendError(res, 400, target);
        return;
      }
      path = target.pathname;
      const route = routeFor(table, path);
      if (!route) {
        sendError(res, 404, 'not found');
        return;
      }
      // Health and readiness are answered at once, whatever waits: a probe learns how the service is, not how
      // long the queue is. Every other request runs within its turn's budget, or waits for a later turn.
      if (route === healthz || route === readyz || turns.hasRoom()) handle(req, res, route, target);
      else turns.later(() => handle(req, res, route, target));
    } catch (error) {
      failed(res, error, path);
    }
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => answerClientError(error, socket));
  // Node closes a CONNECT request's connection without a word unless told otherwise: it is answered instead.
  server.on('connect', (_req: IncomingMessage, socket: Socket) => answerOnSocket(socket, 405, { error: 'CONNECT is not served here' }, 'Allow: GET, POST\r\n'));
  registerShutdownState(server);
  return server;
}

function routeFor(table: readonly Route[], pathname: string): Route | undefined {
  for (const route of table) {
    if (route.prefix ? pathname.startsWith(route.path) : pathname === route.path) return route;
  }
  return undefined;
}

/** The path a failed request named, for the log (without the query). */
function pathOf(res: ServerResponse): string | undefined {
  const url = res.req?.url;
  if (url === undefined) return undefined;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/** Listens and resolves once the port is bound (port 0 picks a free one). */
export function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

// RFC 3986 host: an IP literal in brackets, or a reg-name / IPv4 address, then an optional port.
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]+)(?::\d{0,5})?$/;
const ABSOLUTE_FORM = /^https?:\/\//i;

// A path a URL parser gives back unchanged: only characters it never escapes, no query or fragment, no
// percent sign, and no "." or ".." segment. Nearly every request's path is one, and needs no URL parsed.
const PLAIN_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/**
 * The request's path, or why it has none (answered 400). Accepts the origin form (`/path?query`) and the
 * absolute form (`http://host/path`, which RFC 9112 requires a server to accept), rewriting the latter to
 * the origin form so the routes below, GraphQL's adapter included, only ever see a path. The Host header
 * must be a host: GraphQL's adapter builds its URL from it and answers a bad one with a stack trace.
 */
export function requestTarget(req: IncomingMessage): RequestTarget | string {
  const host = req.headers.host;
  if (host !== undefined && host !== '' && !isValidHost(host)) return 'the Host header is not a valid host';
  const raw = req.url ?? '';
  // A dot segment starts with "/.": most paths have none, and are not scanned for one.
  if (PLAIN_PATH.test(raw) && (!raw.includes('/.') || !DOT_SEGMENT.test(raw))) return { pathname: raw };
  if (raw.startsWith('/')) {
    // A fixed base, never the Host: the path alone decides the route.
    return parseUrl(`http://localhost${raw}`) ?? 'the request target is not a valid path';
  }
  if (ABSOLUTE_FORM.test(raw)) {
    const absolute = parseUrl(raw);
    if (absolute === null) return 'the request target is not a valid URL';
    req.url = `${absolute.pathname}${absolute.search}`;
    return parseUrl(`http://localhost${req.url}`) ?? 'the request target is not a valid URL';
  }
  return 'the request target must be a path such as /graphql';
}

// Hosts that passed the check. Parsing a host as a URL is the dearest step of routing a request (more than
// the path), and nearly every request names a host seen before. Bounded, since the Host is the client's to
// choose: past the bound the set starts again.
const validHosts = new Set<string>();
const MAX_VALID_HOSTS = 256;
// The host last found valid: on one listener nearly every request names the same one, and comparing it costs
// less than hashing the request's new string for the set.
let lastValidHost = '';

function isValidHost(host: string): boolean {
  if (host === lastValidHost) return true;
  if (validHosts.has(host)) {
    lastValidHost = host;
    return true;
  }
  if (!(HOST.test(host) && parses(`http://${host}/`))) return false;
  if (validHosts.size >= MAX_VALID_HOSTS) validHosts.clear();
  validHosts.add(host);
  lastValidHost = host;
  return true;
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

function parses(text: string): boolean {
  return parseUrl(text) !== null;
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ error: message });
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
}

/**
 * Node could not parse the request (bad request line, header or framing; headers too large; a request that
 * took too long). There is no request or response object: the answer is written to the socket itself, in
 * the JSON every other error has, and the connection is closed since its framing cannot be trusted.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431 ? 'the request headers are too large' : status === 408 ? 'the request took too long' : 'the request is not valid HTTP/1.1';
  answerOnSocket(socket, status, { error: message, code: error.code ?? 'HPE_INVALID' });
}

/** A whole JSON answer written to a socket that has no response object, then the connection closed. */
function answerOnSocket(socket: Socket, status: number, content: Record<string, string>, extraHeaders = ''): void {
  const body = JSON.stringify(content);
  socket.on('error', () => socket.destroy());
  // Destroyed once written, not left half-open for the peer to close: a CONNECT socket is no longer the HTTP
  // server's, so closeAllConnections() would not close it and server.close() would wait for it.
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}Connection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
