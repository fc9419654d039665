// A projection worker thread's module for tests: serves the admission trends, with two planted faults that end
// the thread.
// - A page holding a summary of the tenant `crash-the-thread`: once it has committed, an uncaught exception.
// - A page holding a summary of `crash-before-commit`, the first time any thread meets one (the marker file
//   named by CRASH_MARKER_FILE does not exist yet): the thread exits in the middle of applying it, before its
//   transaction commits.
// The tenants' names are repeated in test/integration/ledger/projectionWorker.test.ts (importing this module runs it).
import { existsSync, writeFileSync } from 'node:fs';
import { serveProjectionWorker, type RecordedEvent } from '../../src/ledger/index.ts';
import { admissionTrendsProjection } from '../../projections/admissionTrends.ts';

const mentions = (events: readonly RecordedEvent[], tenant: string) => events.some((event) => (event.dataJson ?? JSON.stringify(event.data)).includes(tenant));

await serveProjectionWorker([
  {
    ...admissionTrendsProjection,
    async applyPage(events, tx) {
      const marker = process.env.CRASH_MARKER_FILE;
      if (marker && mentions(events, 'crash-before-commit') && !existsSync(marker)) {
        writeFileSync(marker, 'crashed once');
        process.exit(1);
      }
      await admissionTrendsProjection.applyPage!(events, tx);
    },
    afterCommit(events) {
      if (mentions(events, 'crash-the-thread')) {
        setImmediate(() => {
          throw new Error('a bug in the projection thread');
        });
      }
    },
  },
]);
