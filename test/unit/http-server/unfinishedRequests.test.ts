// Requests the HTTP listener cannot serve as routes: a body declared and never sent is answered 408 within the
// request timeout (GOVERNANCE_REQUEST_TIMEOUT_SECONDS; the production value is checked end to end in
// test/e2e/fuzz.test.ts), and a CONNECT is answered 405 and its socket closed by the server, so server.close()
// completes even while the client keeps its end open.
import net from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createServer, listen } from '../../../src/http-server/server.ts';
import { measuredOnTime } from '../../support/hostClock.ts';

/** Writes `request` and collects what comes back until the server closes the connection. */
function exchange(port: number, request: string): Promise<{ text: string; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const started = performance.now();
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('end', () => resolve({ text, elapsedMs: performance.now() - started }));
    socket.write(request);
  });
}

describe('requests that do not finish as routes', () => {
  it('a body declared and never sent is answered 408 within the request timeout', async () => {
    const server = createServer({ logger: pino({ level: 'silent' }), readiness: [], settings: { requestTimeoutSeconds: 1 } }, [
      { path: '/echo', handle: (req, res) => void req.resume().on('end', () => res.writeHead(200).end()) },
    ]);
    const { port } = await listen(server, 0, '127.0.0.1');
    try {
      // Measured again when the host, not the server, made the answer late (test/support/hostClock.ts).
      const [answer] = await measuredOnTime('408', 1_000, async () => [await exchange(port, 'POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"a":')]);
      expect(answer!.text).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(answer!.text.slice(answer!.text.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: 'the request took too long' });
      expect(answer!.elapsedMs).toBeLessThanOrEqual(1_000);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  // The client reads the answer and keeps its end open (half-open): only the server can end the connection.
  // Node hands a CONNECT socket over to the 'connect' listener, so closeAllConnections() does not reach it: left
  // half-open it would hold server.close(), and the SIGTERM drain, for ever. A request Node could not parse is
  // answered on the socket too, and must end the same way.
  for (const [what, request, status] of [
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ['bytes that are not HTTP', 'G@T / HTTP/1.1\r\n\r\n', 400],
  ] as const) {
    it(`${what} is answered ${status} and its connection closed by the server, so the server closes`, async () => {
      const server = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, []);
      const { port } = await listen(server, 0, '127.0.0.1');
      const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      const ended = new Promise<void>((resolve) => socket.on('end', () => resolve()));
      socket.write(request);
      await ended;
      expect(text).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toHaveProperty('error');
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      socket.destroy();
    }, 5_000);
  }
});
