// GET /metrics: the Prometheus text format. With a token set, only a scraper that sends it gets the text: the
// labels name the busiest tenants.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Route } from '../http-server/route.ts';
import type { Metrics } from './metrics.ts';

export function metricsRoute(metrics: Metrics, options: { token?: string } = {}): Route {
  const expected = options.token === undefined ? null : digest(options.token);
  return {
    path: '/metrics',
    async handle(req, res) {
      if (expected !== null && !presents(req, expected)) {
        res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="metrics"' }).end('metrics need a bearer token\n');
        return;
      }
      const body = await metrics.render();
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
    },
  };
}

// Compared as digests of equal length, in constant time, so the answer's timing says nothing of the token.
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function presents(req: IncomingMessage, expected: Buffer): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  return match !== null && timingSafeEqual(digest(match[1]!.trim()), expected);
}
