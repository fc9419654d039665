// A route of the service's one HTTP listener. Its own module so the parts that offer routes (the doors,
// GraphQL, /metrics) and the server that serves them import the type without importing each other.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The request's path as a URL would give it (dot segments resolved, characters escaped), without the query. */
export interface RequestTarget {
  readonly pathname: string;
}

/**
 * Answers a fault a handler met in a callback of its own, after it returned (a 500, or a 503 when the database
 * is away; the log gets the error): a handler that answers from the request's events rather than from a
 * promise it returns hands its faults here, so none ends the process. One function for the whole server.
 */
export type RouteFault = (res: ServerResponse, error: unknown) => void;

/** A rejection of the promise a handler returns, or a throw while it runs, is answered as `fault` answers. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, target: RequestTarget, fault: RouteFault) => void | Promise<void>;

export interface Route {
  /** Path prefix ('/graphql', '/v1/ingest/') or exact path ('/metrics'). */
  path: string;
  prefix?: boolean;
  handle: RouteHandler;
}
