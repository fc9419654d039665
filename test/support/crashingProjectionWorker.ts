// A projection worker thread's module for tests: serves the admission trends, and its thread throws an
// uncaught exception once a page holding a summary of the tenant `crash-the-thread` has committed (the fault a
// thread-ending bug would be).
import { serveProjectionWorker } from '../../src/ledger/index.ts';
import { admissionTrendsProjection } from '../../projections/admissionTrends.ts';

// The tenant's name is repeated in test/integration/ledger/projectionWorker.test.ts (importing this module runs it).
const CRASHING_TENANT = 'crash-the-thread';

await serveProjectionWorker([
  {
    ...admissionTrendsProjection,
    afterCommit(events) {
      if (events.some((event) => (event.dataJson ?? JSON.stringify(event.data)).includes(CRASHING_TENANT))) {
        setImmediate(() => {
          throw new Error('a bug in the projection thread');
        });
      }
    },
  },
]);
