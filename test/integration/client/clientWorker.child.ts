// A caller process of the leasing client: admits as fast as it can (in turns, so the exchanges get the event
// loop) for `LEASE_TEST_SECONDS`, counting what it admitted per wall-clock second, and reports any exception
// admit() threw (there must be none) and the client's stats.
import { LeasingClient } from '../../../packages/client/src/index.ts';

// Exchanges get 10 s: three callers and the server share two cores here, and an exchange starved past the
// default 2 s would put a caller on its local fallback, over the shared limit. A killed server is refused at once.
const client = new LeasingClient({ url: process.env.LEASE_TEST_URL!, token: 'test-token', timeoutMs: 10_000 });
const seconds = Number(process.env.LEASE_TEST_SECONDS ?? '12');
const perSecond: Record<number, number> = {};
let exceptions = 0;
client.prepare('fleet', 'API_REQUESTS');
const endAt = Date.now() + seconds * 1000;
while (Date.now() < endAt) {
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
process.stdout.write(`${JSON.stringify({ perSecond, exceptions, stats })}\n`);
