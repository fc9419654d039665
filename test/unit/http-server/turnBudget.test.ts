// The HTTP server's requests take at most a turn's budget of the event loop (src/http-server/turnBudget.ts):
// past it, requests wait in arrival order for later turns, and timers due meanwhile run between those turns.
// Each piece of work holds the thread a set time; what is checked is counted (which work ran in which turn).
import { request as httpRequest } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createServer, listen } from '../../../src/http-server/server.ts';
import { TurnBudget } from '../../../src/http-server/turnBudget.ts';

/** Holds the thread for `ms` (a request's work). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('a turn budget', () => {
  it('runs requests at once within the budget, queues the rest in order, and lets a due timer run between turns', async () => {
    const budget = new TurnBudget(20);
    const events: string[] = [];
    // Due before any request: it must not wait for all of them.
    setTimeout(() => events.push('timer'), 0);
    // One turn's arrivals (a poll phase): ten requests of 8 ms each.
    for (let i = 0; i < 10; i++) {
      const work = () => {
        events.push(`request ${i}`);
        busy(8);
      };
      if (budget.hasRoom()) work();
      else budget.later(work);
    }
    // 0, 8 and 16 ms into the turn there was room; at 24 ms there was not.
    expect(events).toEqual(['request 0', 'request 1', 'request 2']);
    expect(budget.waiting).toBe(7);
    expect(budget.deferred).toBe(7);
    while (budget.waiting > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // All answered, in arrival order; the timer ran before the queue's first turn.
    expect(events.filter((event) => event !== 'timer')).toEqual(Array.from({ length: 10 }, (_, i) => `request ${i}`));
    expect(events.indexOf('timer')).toBe(3);
  });

  it('gives each later turn at most its budget plus one request', async () => {
    const budget = new TurnBudget(20);
    const events: ('tick' | 'request')[] = [];
    // A timer every 1 ms records each time the loop gets to its timers.
    const ticker = setInterval(() => events.push('tick'), 1);
    for (let i = 0; i < 24; i++) {
      const work = () => {
        events.push('request');
        busy(6);
      };
      if (budget.hasRoom()) work();
      else budget.later(work);
    }
    while (budget.waiting > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    clearInterval(ticker);
    // Requests of 6 ms against a 20 ms budget: 4 a turn (begun at 0, 6, 12 and 18 ms), never more between two
    // looks at the timers, counted, not timed (a busy host stretches a turn, not the count).
    const runs = events.join(' ').split('tick').map((run) => run.trim().split(' ').filter(Boolean).length);
    expect(runs.reduce((sum, run) => sum + run, 0)).toBe(24);
    expect(Math.max(...runs)).toBe(4);
  });

  it('sends the server’s requests through the budget, health probes past it, and answers every one', async () => {
    // A budget with no room at all: every request that goes through it waits for a later turn.
    class NoRoom extends TurnBudget {
      override hasRoom(): boolean {
        return false;
      }
    }
    const budget = new NoRoom();
    const server = createServer({ logger: pino({ level: 'silent' }), readiness: [], turns: budget }, [
      {
        path: '/work',
        handle: (_req, res) => {
          busy(1);
          res.writeHead(200).end();
        },
      },
    ]);
    const { port } = await listen(server, 0, '127.0.0.1');
    const get = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({ port, host: '127.0.0.1', path, agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const statuses = await Promise.all([...Array.from({ length: 30 }, () => get('/work')), get('/healthz'), get('/readyz')]);
      expect(statuses).toEqual(Array.from({ length: 32 }, () => 200));
      // Each /work request waited for a later turn; the probes did not.
      expect(budget.deferred).toBe(30);
      expect(budget.waiting).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
