// A network cut between the service and its PostgreSQL: the database runs in a network namespace of its own,
// reached over a veth link (test/support/networkNamespaces.ts), and the link is taken down under traffic, so packets
// vanish as across a failed switch (no refusal, no reset). Meanwhile the service keeps admitting on the
// ceilings it holds (every ingest answered 202, promptly), /readyz answers 503 promptly, and the Governor keeps
// its ledger batches in memory within the stated bound (MAX_PENDING_SUMMARIES summaries, docs/faults.md: no
// tally clamped in a cut this short). Once the link is back, the batches are appended: the ledger holds exactly
// the readings answered 202.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerHttpIngest, startFaultSuiteService, type FaultSuiteService } from '../support/databaseFaultSuite.ts';
import { networkCutMissing, startNetworkNamespace, type NetworkNamespace } from '../support/networkNamespaces.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privateServers.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';

const SUITE_BUDGET_MS = 170_000;
/** How long the link stays down: past the ingest door's 30 s key cache TTL, so cached keys are served stale. */
const CUT_MS = 40_000;
/** Every ingest answer during the cut comes within this (the door never waits on the unreachable database long). */
const ANSWER_WITHIN_MS = 3_000;
/** /readyz answers within this during the cut. */
const READYZ_WITHIN_MS = 3_000;

const missing = networkCutMissing();
const netns = missing ? undefined : await startNetworkNamespace();
const pg = netns
  ? await startPrivatePostgres({ netns: { name: netns.name, ...netns.paths[0]! } }).catch(async (error: unknown) => {
      await netns.dispose();
      throw error;
    })
  : undefined;
if (missing) console.warn(`PostgreSQL network cut suite skipped: ${missing}`);
else if (!pg) {
  await netns?.dispose();
  console.warn('PostgreSQL network cut suite skipped: no private PostgreSQL (see the warning above)');
}

describe.skipIf(!pg)('the service cut off from PostgreSQL by a network cut (veth link down)', () => {
  const postgres = pg as PrivatePostgres;
  const link = netns as NetworkNamespace;
  let suite: FaultSuiteService;

  beforeAll(async () => {
    suite = await startFaultSuiteService('cut', postgres.url);
  }, 120_000);

  afterAll(async () => {
    await link.heal();
    await suite?.close();
    await postgres.dispose();
    await link.dispose();
  });

  it('admits on the ceilings it holds while cut off, says so on /readyz, and appends what it buffered once the link is back', async () => {
    const { baseUrl, service } = suite;
    const problems: string[] = [];
    let slowest = 0;
    let answered = 0;
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const started = Date.now();
        const response = await suite.ingest();
        slowest = Math.max(slowest, Date.now() - started);
        if (response.status !== 202) problems.push(`ingest: ${response.status} ${await response.text()}`);
        else await response.arrayBuffer();
        answered++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      await waitFor(() => answered >= 20, { timeoutMs: 30_000, description: 'traffic before the cut' });
      await link.cut();
      const cutAt = Date.now();
      const failuresBefore = service.governor.stats().recordFailures;
      // /readyz tells the cut, promptly.
      let readyzMs = 0;
      await waitFor(
        async () => {
          const started = Date.now();
          const ready = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(30_000) });
          readyzMs = Math.max(readyzMs, Date.now() - started);
          return ready.status === 503;
        },
        { timeoutMs: 30_000, intervalMs: 200, description: '/readyz 503 during the cut' },
      );
      const answeredAtCut = answered;
      await waitFor(() => Date.now() - cutAt >= CUT_MS, { timeoutMs: CUT_MS + 5_000, intervalMs: 500, description: 'the cut to last' });
      const answeredDuringCut = answered - answeredAtCut;
      const stats = service.governor.stats();
      await link.heal();
      const healedAt = Date.now();
      await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 60_000, intervalMs: 200, description: '/readyz 200 after the cut' });
      const readyAt = Date.now();
      stop = true;
      await loop;
      await service.governor.flush();
      const appendedAt = Date.now();
      console.info(
        `PostgreSQL cut of ${CUT_MS} ms: ${answeredDuringCut} ingest requests answered meanwhile (slowest ${slowest} ms), /readyz answered within ${readyzMs} ms, ` +
          `record failures ${stats.recordFailures - failuresBefore}, clamped tallies ${stats.clampedTallies}; /readyz 200 ${readyAt - healedAt} ms after the link came back, ` +
          `everything appended ${appendedAt - healedAt} ms after`,
      );
      expect(problems).toEqual([]);
      expect(answeredDuringCut).toBeGreaterThan(10);
      expect(slowest).toBeLessThan(ANSWER_WITHIN_MS);
      expect(readyzMs).toBeLessThan(READYZ_WITHIN_MS);
      expect(stats.clampedTallies).toBe(0);
    } finally {
      stop = true;
      await link.heal();
      await loop;
    }
    expect(ledgerHttpIngest(await readWholeLedger(service.store), 'acme')).toBe(suite.acceptedReadings);
  }, SUITE_BUDGET_MS);
});
