import type { Route } from '../../http-server/route.ts';
import { OPENAPI_DOCUMENT, OPENAPI_PATH } from './openapiDocument.ts';

/** GET /openapi.json: the document is fixed, so its text is made once. */
export function openapiRoute(): Route {
  const text = JSON.stringify(OPENAPI_DOCUMENT);
  return {
    path: OPENAPI_PATH,
    handle(_req, res) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    },
  };
}
