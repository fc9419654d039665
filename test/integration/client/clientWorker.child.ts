// A caller process of the leasing client: admits as fast as it can (in turns, so the exchanges get the event
// loop) for `LEASE_TEST_SECONDS`, counting what it admitted per wall-clock second, and reports any exception
// admit() threw (there must be none), the client's stats, and per second the longest gap between two of its turns
// (a caller the machine did not run for part of a second offered less than the limit in it).
import { LeasingClient } from '../../../packages/client/src/index.ts';

// The production settings (an exchange not answered within 2 s is a failure): accuracy is proven as deployed.
const client = new LeasingClient({ url: process.env.LEASE_TEST_URL!, token: 'test-token' });
const seconds = Number(process.env.LEASE_TEST_SECONDS ?? '12');
const perSecond: Record<number, number> = {};
const longestGapMs: Record<number, number> = {};
let exceptions = 0;
client.prepare('fleet', 'API_REQUESTS');
const startedAtMs = Date.now();
const endAt = startedAtMs + seconds * 1000;
let lastTurnMs = Date.now();
while (Date.now() < endAt) {
  const turnMs = Date.now();
  const turnSecond = Math.floor(turnMs / 1000);
  longestGapMs[turnSecond] = Math.max(longestGapMs[turnSecond] ?? 0, turnMs - lastTurnMs);
  lastTurnMs = turnMs;
  for (let i = 0; i < 500; i++) {
    try {
      if (client.admit('fleet', 'API_REQUESTS')) {
        const second = Math.floor(Date.now() / 1000);
        perSecond[second] = (perSecond[second] ?? 0) + 1;
      }
    } catch {
      exceptions++;
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 1));
}
const stats = client.stats();
await client.close();
process.stdout.write(`${JSON.stringify({ perSecond, longestGapMs, exceptions, stats, startedAtMs, endedAtMs: endAt })}\n`);
