// The ingest front door's routes for the service's one listener. Browsers may post (CORS): a preflight is
// answered here without charging anything, since it carries no readings.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestTarget, Route, RouteFault, RouteHandler } from '../../http-server/route.ts';
import { createClientResolver } from './frontDoor.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';
import { createIngestHandler, INGEST_PREFIX } from './ingestRoute.ts';
import { createIntegrationsHandler, INTEGRATIONS_PREFIX } from './integrationsRoute.ts';
import { EXPOSED_HEADERS } from '../../http-server/rateLimitHeaders.ts';
import { sendJson } from '../../http-server/respond.ts';

export function createIngestRoutes(deps: FrontDoorDeps): Route[] {
  const clients = createClientResolver(deps);
  return [
    { path: INGEST_PREFIX, prefix: true, handle: postOnly(createIngestHandler(deps, clients)) },
    { path: INTEGRATIONS_PREFIX, prefix: true, handle: postOnly(createIntegrationsHandler(deps, clients)) },
  ];
}

function postOnly(handle: RouteHandler): RouteHandler {
  return (req: IncomingMessage, res: ServerResponse, target: RequestTarget, fault: RouteFault) => {
    if (req.method === 'POST') return handle(req, res, target, fault);
    if (req.method === 'OPTIONS') {
      res
        .writeHead(204, {
          'Access-Control-Allow-Origin': '*',
          'Access-Control-Allow-Methods': 'POST',
          'Access-Control-Allow-Headers': 'Content-Type, X-Device-Key, X-Request-ID',
          'Access-Control-Expose-Headers': EXPOSED_HEADERS,
          'Access-Control-Max-Age': '600',
        })
        .end();
      return;
    }
    sendJson(res, 405, { error: `${req.method ?? 'this method'} is not allowed; POST readings` }, ['Allow', 'POST, OPTIONS']);
  };
}
