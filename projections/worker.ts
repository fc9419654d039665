// The module a projection worker thread starts from (src/ledger/projectionWorker.ts): it serves the projections
// that may run in a thread of their own. The bundle builds it as dist/service/projection-worker.js.
import { serveProjectionWorker } from '../src/ledger/index.ts';
import { WORKER_PROJECTIONS } from './workerProjections.ts';

await serveProjectionWorker(WORKER_PROJECTIONS);
