// /favicon.ico answers an icon (browsers ask for it on every page of the service; it was a 404), built or not.
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Server } from 'node:http';
import { faviconRoute } from '../../../src/console/favicon.ts';
import { createServer, listen } from '../../../src/http-server/server.ts';

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, [faviconRoute()]);
  baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

it('answers /favicon.ico with an SVG icon, and only GET and HEAD', async () => {
  const response = await fetch(`${baseUrl}/favicon.ico`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('image/svg+xml');
  expect(await response.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  expect((await fetch(`${baseUrl}/favicon.ico`, { method: 'POST' })).status).toBe(405);
});
