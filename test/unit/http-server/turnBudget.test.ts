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
  it('runs requests at once within the budget, then the rest in arrival order, one a turn with the timers between', async () => {
    const budget = new TurnBudget(20);
    const events: string[] = [];
    // A timer every 1 ms records each time the loop gets to its timers.
    const ticker = setInterval(() => events.push('tick'), 1);
    // One turn's arrivals (a poll phase): ten requests of 6 ms each, each asking when it arrives.
    const asked: number[] = [];
    for (let i = 0; i < 10; i++) {
      const work = () => {
        events.push(`request ${i}`);
        busy(6);
      };
      asked.push(performance.now());
      if (budget.hasRoom()) work();
      else budget.later(work);
    }
    // Those that asked within the budget of the first ran at once (0, 6, 12, 18 ms into the turn), the rest wait.
    const atOnce = asked.filter((at) => at - asked[0]! < 20).length;
    expect(atOnce).toBeGreaterThanOrEqual(2);
    expect(atOnce).toBeLessThanOrEqual(4);
    expect(events).toEqual(Array.from({ length: atOnce }, (_, i) => `request ${i}`));
    expect(budget.waiting).toBe(10 - atOnce);
    expect(budget.deferred).toBe(10 - atOnce);
    while (budget.waiting > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    clearInterval(ticker);
    // All answered, in arrival order.
    expect(events.filter((event) => event !== 'tick')).toEqual(Array.from({ length: 10 }, (_, i) => `request ${i}`));
    // The waiting ones one a turn: the loop got to its timers between any two of them (each held it 6 ms),
    // counted, not timed (a busy host stretches a turn, not the count).
    const runs = events.join(' ').split('tick').map((run) => run.trim().split(' request').filter(Boolean).length);
    // The first turn: those run at once, and at most the queue's first from its check phase.
    expect(runs[0]).toBeGreaterThanOrEqual(atOnce);
    expect(runs[0]).toBeLessThanOrEqual(atOnce + 1);
    expect(Math.max(...runs.slice(1))).toBeLessThanOrEqual(1);
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
