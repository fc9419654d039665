// The console route's answers when the console was not built: JSON like every error answer of the service
// (found by the fuzz suite: it was text/plain).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { consoleRoute } from '../../../src/console/consoleRoute.ts';
import { createServer, listen } from '../../../src/http-server/server.ts';
import type { Server } from 'node:http';

let dir: string;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'gl-console-unbuilt-'));
  server = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, [consoleRoute(dir)]);
  baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

it('answers 503 with a JSON error naming the build step when the console is not built', async () => {
  for (const target of ['/console/', '/console/assets/x.js']) {
    const response = await fetch(`${baseUrl}${target}`);
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await response.json()) as { error: string }).error).toMatch(/npm run build/);
  }
});
