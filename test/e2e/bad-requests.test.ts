// Requests a client can craft to break the listener: a request target or Host that is not a URL, bytes that
// are not HTTP, a handler that throws. Each gets a 4xx/5xx with a JSON body and no stack trace, and the
// process keeps serving: every case is followed by a /healthz on a new connection.
import type { Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, listen } from '../../src/http-server/server.ts';
import type { Route } from '../../src/http-server/route.ts';
import { sendRaw, type RawResponse } from '../support/rawHttp.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';

// One storage mode is enough here: PostgreSQL when it is set (faster to start), else embedded.
const mode = serviceModes('e2e_bad_requests').at(-1)!;
const STACK = /\n\s+at |node_modules|\.ts:\d+/;

function expectJsonError(response: RawResponse, status: number): void {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(response.body) as { error?: unknown };
  expect(typeof body.error).toBe('string');
  expect(response.body).not.toMatch(STACK);
}

describe(`bad requests reach no further than a JSON error (${mode.name})`, () => {
  let running: RunningService;
  let port: number;
  let faulty: Server;
  let faultyPort: number;

  beforeAll(async () => {
    running = await startServiceIn(mode);
    port = Number(new URL(running.baseUrl).port);
    // Handlers that fail in each way a handler can: a throw, a rejection, a rejection after the headers went out.
    const failing: Route[] = [
      { path: '/throws', handle: () => { throw new Error('thrown at /throws'); } },
      { path: '/rejects', handle: () => Promise.reject(new Error('rejected at /rejects')) },
      {
        path: '/half',
        handle: async (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('partial');
          await Promise.resolve();
          throw new Error('failed half way');
        },
      },
    ];
    faulty = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, failing);
    faultyPort = (await listen(faulty, 0, '127.0.0.1')).port;
  }, 180_000);

  afterAll(async () => {
    faulty?.closeAllConnections();
    await new Promise<void>((resolve) => (faulty ? faulty.close(() => resolve()) : resolve()));
    await running?.stop();
  });

  const stillServing = async (at = port) => {
    const health = await sendRaw(at, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(health.status).toBe(200);
  };

  it('a target that a URL parser reads as a host (//[) is a path like any other: 404, and the process serves on', async () => {
    expectJsonError(await sendRaw(port, 'GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'), 404);
    await stillServing();
  });

  it.each([
    ['an absolute-form target that is no URL', 'GET http://[ HTTP/1.1\r\nHost: 127.0.0.1\r\n'],
    ['an absolute-form target with a bad authority', 'GET http://a@[/graphql HTTP/1.1\r\nHost: 127.0.0.1\r\n'],
    ['the asterisk form', 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n'],
    ['a Host that is no host (GraphQL)', 'POST /graphql HTTP/1.1\r\nHost: [::1\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{"query":"{__typename}"}'],
    ['a Host with a path (GraphQL)', 'GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: a/b\r\n'],
    ['a Host that is no host (ingest)', 'POST /v1/ingest/acme HTTP/1.1\r\nHost: x y\r\nContent-Length: 2\r\n\r\n{}'],
  ])('%s: 400 with a JSON body, and the process serves on', async (_name, head) => {
    const request = head.includes('\r\n\r\n') ? head : `${head}\r\n`;
    expectJsonError(await sendRaw(port, request), 400);
    await stillServing();
  });

  it.each([
    ['a header line without a colon', 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n'],
    ['a request line that is not HTTP', 'HELLO\r\n\r\n'],
    ['conflicting Content-Length headers', 'POST /v1/ingest/acme HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}'],
    ['a bad chunk size', 'POST /v1/ingest/acme HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['headers too large', `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
  ])('%s: answered by Node\'s parser with a JSON error, and the process serves on', async (_name, request) => {
    const response = await sendRaw(port, request);
    expect([400, 431]).toContain(response.status);
    expectJsonError(response, response.status);
    await stillServing();
  });

  it('an absolute-form target is served as its path', async () => {
    const response = await sendRaw(port, `GET http://127.0.0.1:${port}/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ status: 'ok' });
  });

  it('GraphQL answers a sane request after the bad ones', async () => {
    const response = await fetch(`${running.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    // No token: refused, as JSON, without a stack.
    expect(response.headers.get('content-type')).toMatch(/json/);
    expect(await response.text()).not.toMatch(STACK);
  });

  it.each(['/throws', '/rejects'])('a handler that fails (%s) answers 500 with a JSON body and no stack', async (path) => {
    expectJsonError(await sendRaw(faultyPort, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`), 500);
    await stillServing(faultyPort);
  });

  it('a handler that fails after its headers went out ends the connection and the process serves on', async () => {
    await expect(sendRaw(faultyPort, 'GET /half HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')).rejects.toThrow(/without a complete answer|ECONNRESET/);
    await stillServing(faultyPort);
  });
});
