// The service's icon at /favicon.ico, where browsers ask for it on every page of the service (the console,
// GraphiQL): a small SVG (the letter G on the console's green), kept in code so that it answers even when the
// console is not built. The console's page names the same icon.
import type { Route } from '../http-server/route.ts';

export const FAVICON_PATH = '/favicon.ico';

const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f883d"/>' +
  '<text x="16" y="23" font-family="system-ui,sans-serif" font-size="20" font-weight="700" fill="#fff" text-anchor="middle">G</text></svg>';

export function faviconRoute(): Route {
  return {
    path: FAVICON_PATH,
    handle(req, res) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end('{"error":"method not allowed"}');
        return;
      }
      res
        .writeHead(200, { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' })
        .end(req.method === 'HEAD' ? '' : FAVICON_SVG);
    },
  };
}
