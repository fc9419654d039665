// A route of the service's one HTTP listener. Its own module so the parts that offer routes (the doors,
// GraphQL, /metrics) and the server that serves them import the type without importing each other.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The request's path as a URL would give it (dot segments resolved, characters escaped), without the query. */
export interface RequestTarget {
  readonly pathname: string;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, target: RequestTarget) => void | Promise<void>;

export interface Route {
  /** Path prefix ('/graphql', '/v1/ingest/') or exact path ('/metrics'). */
  path: string;
  prefix?: boolean;
  handle: RouteHandler;
}
