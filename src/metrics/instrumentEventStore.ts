// Times every ledger append on ledger_append_duration_seconds. The other methods pass straight through;
// they are delegated one by one (not spread) so an adapter written as a class keeps working.
import type { EventStore } from '../ledger/index.ts';
import type { Metrics } from './metrics.ts';

export function instrumentEventStore(store: EventStore, metrics: Metrics): EventStore {
  const instrumented: EventStore = {
    appendLimitBytes: store.appendLimitBytes,
    async append(stream, events, options) {
      const stop = metrics.ledgerAppendSeconds.startTimer();
      try {
        const result = await store.append(stream, events, options);
        stop({ outcome: 'ok' });
        return result;
      } catch (error) {
        stop({ outcome: 'error' });
        throw error;
      }
    },
    readStream: (stream, options) => store.readStream(stream, options),
    readAll: (after, maxCount, options) => store.readAll(after, maxCount, options),
    readAllPage: (after, maxCount, options) => store.readAllPage(after, maxCount, options),
    firstPending: (after, options) => store.firstPending(after, options),
    headPosition: () => store.headPosition(),
    identity: () => store.identity(),
    subscribe: (after, options) => store.subscribe(after, options),
    close: () => store.close(),
  };
  return instrumented;
}
