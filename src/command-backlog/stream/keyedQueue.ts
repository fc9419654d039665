/**
 * Runs tasks with the same key one after another, tasks with different keys side by side. The stream path
 * queues one tenant's decisions in-process this way: they would otherwise all read the same revision and
 * all but one fail on the expected revision, over and over; now only other processes can conflict.
 */
export function createKeyedQueue() {
  const tails = new Map<string, Promise<unknown>>();
  return function run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.catch(() => {});
    tails.set(key, tail);
    // Forget the key once its last task is done, so idle tenants hold no memory here.
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return result;
  };
}
