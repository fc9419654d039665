// GET /metrics: the Prometheus text format.
import type { Route } from '../server.ts';
import type { Metrics } from './metrics.ts';

export function metricsRoute(metrics: Metrics): Route {
  return {
    path: '/metrics',
    async handle(_req, res) {
      const body = await metrics.render();
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
    },
  };
}
