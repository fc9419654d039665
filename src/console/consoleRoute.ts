// Serves the built console (dist/console, made by `npm run build`, which `npm ci` runs) at /console. Only
// files inside that folder are served, with a strict Content-Security-Policy: the console loads nothing from
// elsewhere and talks to nothing but this service's own /graphql.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ServerResponse } from 'node:http';
import type { Route } from '../http-server/route.ts';
import { packagePath } from '../packageRoot.ts';
import { CONSOLE_SECURITY_HEADERS } from './pageSecurity.ts';

export const CONSOLE_PATH = '/console';
export const CONSOLE_DIR = packagePath('dist', 'console');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

function send(res: ServerResponse, status: number, type: string, body: Buffer | string, cache: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': cache, ...CONSOLE_SECURITY_HEADERS }).end(body);
}

/** The file under `dir` a request path names, or null when it names none (or tries to leave the folder). */
function fileFor(dir: string, pathname: string): string | null {
  const relative = pathname.slice(CONSOLE_PATH.length).replace(/^\/+/, '');
  if (relative === '') return path.join(dir, 'index.html');
  let decoded: string;
  try {
    decoded = decodeURIComponent(relative);
  } catch {
    return null;
  }
  const file = path.resolve(dir, decoded);
  return file.startsWith(dir + path.sep) ? file : null;
}

export function consoleRoute(dir = CONSOLE_DIR): Route {
  return {
    path: CONSOLE_PATH,
    prefix: true,
    async handle(req, res, url) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json', ...CONSOLE_SECURITY_HEADERS }).end('{"error":"method not allowed"}');
        return;
      }
      // /consolefoo is not the console; /console without the slash goes to /console/ so relative URLs resolve.
      if (url.pathname !== CONSOLE_PATH && !url.pathname.startsWith(`${CONSOLE_PATH}/`)) {
        res.writeHead(404, { 'content-type': 'application/json', ...CONSOLE_SECURITY_HEADERS }).end('{"error":"not found"}');
        return;
      }
      if (url.pathname === CONSOLE_PATH) {
        res.writeHead(308, { location: `${CONSOLE_PATH}/` }).end();
        return;
      }
      const file = fileFor(dir, url.pathname);
      const found = file && (await stat(file).catch(() => null))?.isFile();
      if (!file || !found) {
        const built = (await stat(path.join(dir, 'index.html')).catch(() => null))?.isFile();
        if (!built) {
          // JSON, as every error answer of the service is (the fuzz suite holds all routes to it).
          send(res, 503, 'application/json', '{"error":"the console is not built: run `npm run build` (npm ci does it)"}', 'no-store');
          return;
        }
        res.writeHead(404, { 'content-type': 'application/json', ...CONSOLE_SECURITY_HEADERS }).end('{"error":"not found"}');
        return;
      }
      const body = await readFile(file);
      // Asset names carry a content hash, so they never change; index.html must be fetched fresh each time.
      const cache = file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache';
      send(res, 200, TYPES[path.extname(file)] ?? 'application/octet-stream', req.method === 'HEAD' ? '' : body, cache);
    },
  };
}
