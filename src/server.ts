// The one HTTP listener: health, metrics, GraphQL and the ingest front door share a port.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleHealthz, handleReadyz } from './http/health.ts';
import type { Service } from './service.ts';

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

export interface Route {
  /** Path prefix ('/graphql', '/v1/ingest/') or exact path ('/metrics'). */
  path: string;
  prefix?: boolean;
  handle: RouteHandler;
}

/** Needs only the service's logger and readiness checks, so a front door can be served without a whole service. */
export function createServer(service: Pick<Service, 'logger' | 'readiness'>, routes: readonly Route[]): Server {
  const table: Route[] = [
    { path: '/healthz', handle: handleHealthz },
    { path: '/readyz', handle: (_req, res) => handleReadyz(service.readiness, res) },
    ...routes,
  ];
  return createHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = table.find((each) => (each.prefix ? url.pathname.startsWith(each.path) : url.pathname === each.path));
    if (!route) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    Promise.resolve(route.handle(req, res, url)).catch((error: unknown) => {
      service.logger.error({ err: error, path: url.pathname }, 'request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"internal error"}');
    });
  });
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
