// Which database a read goes to when DATABASE_READ_URL names a streaming replica of the primary.
//
// Reads that may be a little stale (trends, top shedders, limit history, command lists) go to the replica while
// it is known to be close behind; everything else, every read of a mutation, and every read of a caller who
// wrote lately stays on the primary. How close the replica is comes from a probe, every PROBE_INTERVAL_MS: it
// reads the primary's current WAL position, then asks the replica whether it has replayed that far. When it
// has, everything the primary had committed when the probe started is on the replica: an answer read there
// then misses at most what was committed since that moment, and `stalenessSeconds` (the time since it) bounds
// how stale the answer is. The bound needs no clock shared with the servers: both times are this process's.
//
// Read-your-writes: a caller's write is remembered (the time its mutation finished); the caller's stale reads
// go to the primary until a probe that started after that write finds the replica caught up. This holds within
// one service process: a caller whose next request reaches another replica of the service behind a balancer
// is not known there (docs/scaling.md, "PostgreSQL replicas").
//
// The primary's position is its WAL insert position, not its write position: with synchronous_commit off a
// commit returns before its WAL is written, so a probe that read the write position could find the replica
// "caught up" without a write its caller was already told had committed, and send that caller's next read there.
//
// A replica that fails a read is not read from until a probe succeeds again; that read is answered from the
// primary. A replica that is no longer in recovery (it was promoted: it is a primary of its own now, whose
// history may leave the service's) is never read from.
import type { Queryable } from '../db/index.ts';

/** How often the replica's replay position is compared with the primary's. */
export const PROBE_INTERVAL_MS = 500;
/** A probe not answered within this takes the replica out of use until one answers. */
export const PROBE_TIMEOUT_MS = 1_000;
/** Writers remembered at once; past it every caller reads the primary until the replica catches up. */
export const MAX_REMEMBERED_WRITERS = 100_000;

export interface ReplicaState {
  /** Whether stale reads go to the replica now. */
  usable: boolean;
  /** Seconds since the primary position the replica was last seen to have replayed was read (null: never). */
  stalenessSeconds: number | null;
  /** Bytes of WAL the replica was behind the primary at the last probe (null: unknown). */
  lagBytes: number | null;
  /** Why the replica is not read from (null when usable). */
  reason: string | null;
}

/** What one GraphQL request read from the replica: the largest staleness bound of its reads there. */
export interface ReadSourceRecord {
  replicaReads: number;
  stalenessSeconds: number;
}

export interface ReadRouting {
  /**
   * The Queryable for reads that may be a little stale, for one request of `writer` (a caller's id). `record`
   * collects what came from the replica, for the answer's `readReplica` extension.
   */
  staleReads(writer: string, record: ReadSourceRecord): Queryable;
  /** A write by `writer` has committed: its next stale reads see it. */
  wrote(writer: string): void;
  state(): ReplicaState;
  close(): Promise<void>;
}

export interface ReadRoutingOptions {
  primary: Queryable;
  replica: Queryable & { close(): Promise<void> };
  /** A replica further behind than this (seconds since it was last seen caught up) is not read from. */
  maxStalenessSeconds: number;
  /** Told when the replica stops or starts being read from, with the reason. */
  onChange?: (state: ReplicaState) => void;
  probeIntervalMs?: number;
}

interface ProbeRow {
  recovery: boolean;
  caught_up: boolean | null;
  behind: string | null;
}

export function createReadRouting(options: ReadRoutingOptions): ReadRouting {
  const { primary, replica, maxStalenessSeconds } = options;
  const now = () => performance.now();
  /** When (this process's clock) the primary position the replica was last seen to have replayed was read. */
  let caughtUpAt: number | undefined;
  let lagBytes: number | null = null;
  let failure: string | null = 'not probed yet';
  /** Set when the remembered writers overflowed: every caller reads the primary until a probe after it. */
  let everyoneWroteAt = -Infinity;
  const writers = new Map<string, number>();
  let closed = false;
  let lastUsable = false;

  /** When the probe under way started (undefined between probes). */
  let probeStartedAt: number | undefined;
  const probeTimeoutMs = PROBE_TIMEOUT_MS;

  const state = (): ReplicaState => {
    const stalenessSeconds = caughtUpAt === undefined ? null : (now() - caughtUpAt) / 1000;
    // A replica cut off by the network refuses nothing: a probe that has not answered says so before any timeout.
    const hanging = probeStartedAt !== undefined && now() - probeStartedAt > probeTimeoutMs ? `the probe has not answered for ${probeTimeoutMs / 1000} s` : null;
    const reason =
      hanging ??
      failure ??
      (stalenessSeconds === null
        ? 'never seen caught up'
        : stalenessSeconds > maxStalenessSeconds
          ? `more than ${maxStalenessSeconds} s behind the primary`
          : null);
    return { usable: reason === null, stalenessSeconds, lagBytes, reason };
  };

  const probe = async () => {
    const startedAt = now();
    probeStartedAt = startedAt;
    try {
      const position = await primary.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
      const lsn = position.rows[0]!.lsn;
      const answer = await replica.query<ProbeRow>(
        `SELECT pg_is_in_recovery() AS recovery, pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up,
                pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::text AS behind`,
        [lsn],
      );
      const row = answer.rows[0]!;
      if (!row.recovery) {
        failure = 'DATABASE_READ_URL is not in recovery (not a streaming replica, or promoted)';
        lagBytes = null;
      } else {
        failure = null;
        lagBytes = row.behind === null ? null : Math.max(0, Number(row.behind));
        if (row.caught_up) caughtUpAt = startedAt;
      }
    } catch (error) {
      failure = `the probe failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    probeStartedAt = undefined;
    // Writers whose write the replica holds need not be remembered.
    if (caughtUpAt !== undefined) for (const [writer, at] of writers) if (at < caughtUpAt) writers.delete(writer);
    const current = state();
    if (current.usable !== lastUsable) {
      lastUsable = current.usable;
      options.onChange?.(current);
    }
  };

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const loop = () => {
    if (closed) return;
    running = probe().finally(() => {
      running = undefined;
      if (!closed) timer = setTimeout(loop, options.probeIntervalMs ?? PROBE_INTERVAL_MS);
      timer?.unref();
    });
  };
  loop();

  /** Whether a read by `writer` may go to the replica now. */
  const replicaServes = (writer: string): boolean => {
    if (!state().usable || caughtUpAt === undefined) return false;
    const wroteAt = Math.max(writers.get(writer) ?? -Infinity, everyoneWroteAt);
    return wroteAt < caughtUpAt;
  };

  return {
    staleReads(writer, record) {
      const read = async <Row>(sql: string, params?: readonly unknown[]) => {
        if (replicaServes(writer)) {
          const bound = (now() - caughtUpAt!) / 1000;
          try {
            const result = await replica.query<Row>(sql, params);
            record.replicaReads++;
            record.stalenessSeconds = Math.max(record.stalenessSeconds, bound);
            return result;
          } catch (error) {
            // A query the replica refused for its own reasons (a conflict with recovery, the replica away) is
            // answered by the primary; a wrong query fails there the same way.
            failure = `a read failed: ${error instanceof Error ? error.message : String(error)}`;
          }
        }
        return primary.query<Row>(sql, params);
      };
      return {
        query: read,
        exec: (sql) => primary.exec(sql),
      };
    },
    wrote(writer) {
      if (writers.size >= MAX_REMEMBERED_WRITERS && !writers.has(writer)) {
        writers.clear();
        everyoneWroteAt = now();
        return;
      }
      writers.delete(writer);
      writers.set(writer, now());
    },
    state,
    async close() {
      closed = true;
      clearTimeout(timer);
      // A replica cut off by the network holds its probe (and the pool its connection) until the query timeout:
      // the service's stop does not wait for that.
      const bounded = (work: Promise<unknown> | undefined) =>
        Promise.race([work?.catch(() => {}), new Promise((resolve) => setTimeout(resolve, PROBE_TIMEOUT_MS).unref())]);
      await bounded(running);
      await bounded(replica.close());
    },
  };
}

/** Every read on the primary: the service without DATABASE_READ_URL. */
export function primaryOnly(primary: Queryable): ReadRouting {
  return {
    staleReads: () => primary,
    wrote: () => {},
    state: () => ({ usable: false, stalenessSeconds: null, lagBytes: null, reason: 'DATABASE_READ_URL is not set' }),
    close: async () => {},
  };
}
