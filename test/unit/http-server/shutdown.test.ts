// stopServing on a keep-alive connection: the answer to a request in flight when the close begins says
// `Connection: close` and its connection ends; an idle keep-alive connection is closed; the server's close
// completes. The client keeps its connection alive (an Agent with keepAlive), so a `Connection: close` can
// only come from the server.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, listen } from '../../../src/http-server/server.ts';
import { stopServing } from '../../../src/http-server/shutdown.ts';
import { waitFor } from '../../support/waitFor.ts';

interface Answer {
  status: number;
  connection: string | undefined;
}

function get(port: number, path: string, agent: http.Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, path, agent }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode!, connection: response.headers.connection }));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('stopServing', () => {
  const agents: http.Agent[] = [];
  afterEach(() => {
    for (const agent of agents.splice(0)) agent.destroy();
  });

  it('an answer in flight on a keep-alive connection says Connection: close, and the close completes', async () => {
    let arrived = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = async (_req: IncomingMessage, res: ServerResponse) => {
      arrived = true;
      await released;
      res.writeHead(200, ['Content-Type', 'text/plain']).end('done');
    };
    const quick = (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, ['Content-Type', 'text/plain']).end('done');
    };
    const server = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, [
      { path: '/slow', handle: slow },
      { path: '/quick', handle: quick },
    ]);
    const { port } = await listen(server, 0, '127.0.0.1');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const idleAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent, idleAgent);

    // Both connections kept alive before the close.
    expect(await get(port, '/quick', agent)).toEqual({ status: 200, connection: 'keep-alive' });
    expect(await get(port, '/quick', idleAgent)).toEqual({ status: 200, connection: 'keep-alive' });

    const inFlight = get(port, '/slow', agent);
    await waitFor(() => arrived, { description: 'the slow request to reach its handler' });
    const stopped = stopServing(server, { graceMs: 5_000 });
    release();
    expect(await inFlight).toEqual({ status: 200, connection: 'close' });
    // Nothing was cut: the in-flight answer finished, the idle connection was closed.
    expect(await stopped).toEqual({ cut: false });
  });
});
