// A projection worker thread's module for tests: serves the admission trends, with two planted poisons that a
// bounds check cannot see (they stand for bugs): a page holding a summary of the tenant `eat-the-heap` allocates
// until the thread's heap is exhausted; one holding `spin-the-loop` computes for ever without yielding.
// The tenants' names are repeated in test/integration/ledger/projectionWorkerQuarantine.test.ts (importing this
// module runs it).
import { serveProjectionWorker, type RecordedEvent } from '../../src/ledger/index.ts';
import { admissionTrendsProjection } from '../../projections/admissionTrends.ts';

const mentions = (events: readonly RecordedEvent[], tenant: string) => events.some((event) => (event.dataJson ?? JSON.stringify(event.data)).includes(tenant));

await serveProjectionWorker([
  {
    ...admissionTrendsProjection,
    async applyPage(events, tx) {
      if (mentions(events, 'eat-the-heap')) {
        const hoard: number[][] = [];
        for (;;) hoard.push(new Array<number>(100_000).fill(hoard.length));
      }
      if (mentions(events, 'spin-the-loop')) {
        let turns = 0;
        for (;;) turns = (turns + 1) % 1_000_003;
      }
      return admissionTrendsProjection.applyPage!(events, tx);
    },
  },
]);
