import type { Db } from '../../db/db.ts';
import { ledgerChannel } from './ledgerChannel.ts';

/** Wakes subscribers when an append commits, through one LISTEN shared by every subscriber of a store. */
export interface AppendSignal {
  /** Calls `onAppend` after each committed append from now on; resolves to a function that stops it. */
  listen(onAppend: () => void): Promise<() => void>;
  close(): Promise<void>;
}

export function createAppendSignal(db: Db): AppendSignal {
  const listeners = new Set<() => void>();
  let listening: Promise<(() => Promise<void>) | undefined> | undefined;

  const startListening = async () => {
    try {
      return await db.listen(await ledgerChannel(db), () => listeners.forEach((listener) => listener()));
    } catch {
      // Subscribers still poll; the next subscriber tries LISTEN again.
      listening = undefined;
      return undefined;
    }
  };

  return {
    async listen(onAppend) {
      listeners.add(onAppend);
      listening ??= startListening();
      await listening;
      return () => listeners.delete(onAppend);
    },
    async close() {
      listeners.clear();
      const unlisten = await listening;
      listening = undefined;
      await unlisten?.();
    },
  };
}
