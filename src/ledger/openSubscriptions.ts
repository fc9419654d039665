// The subscriptions a store has handed out and not yet seen closed, so the store's close() can end the ones
// its callers left open. Both adapters (PostgreSQL, EventStoreDB) keep them the same way.
import type { Subscription } from './eventStore.ts';

export interface OpenSubscriptions {
  /** Remembers a new subscription; closing the returned one closes it and forgets it. */
  track(subscription: Subscription): Subscription;
  /** Closes every subscription still open. */
  closeAll(): Promise<void>;
}

export function createOpenSubscriptions(): OpenSubscriptions {
  const open = new Set<Subscription>();
  return {
    track(subscription) {
      open.add(subscription);
      return {
        [Symbol.asyncIterator]: () => subscription[Symbol.asyncIterator](),
        async close() {
          open.delete(subscription);
          await subscription.close();
        },
      };
    },
    async closeAll() {
      await Promise.all([...open].map((subscription) => subscription.close()));
      open.clear();
    },
  };
}
