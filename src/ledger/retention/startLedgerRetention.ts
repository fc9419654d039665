// The service's retention pass, at start and then every hour: make the summary partitions of the coming
// days, and archive the days older than the retention. Failures are reported and tried again at the next
// pass; nothing here can stop the service or an append (a day without a partition goes to the default one).
import type { Db } from '../../db/db.ts';
import type { Projection } from '../projection.ts';
import { addDays, dayOf, ensureSummaryPartitions } from '../postgres/summaryPartitions.ts';
import { archiveSummaryDays, type ArchiveOutcome, type ArchivedDay } from './archiveSummaries.ts';

export interface LedgerRetentionOptions {
  /** GOVERNANCE_LEDGER_RETENTION_DAYS: raw summaries kept this many days; undefined keeps them for good. */
  retentionDays: number | undefined;
  /** GOVERNANCE_LEDGER_ARCHIVE_DIR. */
  dir: string;
  /** GOVERNANCE_LEDGER_ARCHIVE_COMMAND. */
  command?: string | undefined;
  projections: readonly Pick<Projection, 'name' | 'eventTypes'>[];
  intervalMs?: number;
  now?: () => number;
  onError?: (error: unknown) => void;
  onPass?: (pass: { madePartitions: string[]; archive?: ArchiveOutcome }) => void;
  onArchived?: (day: ArchivedDay) => void;
}

export interface LedgerRetention {
  /** Runs a pass now (after the one under way, if any). */
  runOnce(): Promise<void>;
  close(): Promise<void>;
}

const HOUR_MS = 3_600_000;

export function startLedgerRetention(db: Db, options: LedgerRetentionOptions): LedgerRetention {
  const now = options.now ?? Date.now;
  let running: Promise<void> = Promise.resolve();
  let closed = false;

  const pass = async () => {
    if (closed) return;
    try {
      const madePartitions = await ensureSummaryPartitions(db, { now: now() });
      let archive: ArchiveOutcome | undefined;
      if (options.retentionDays !== undefined && !closed) {
        archive = await archiveSummaryDays(db, {
          dir: options.dir,
          before: addDays(dayOf(now()), -options.retentionDays),
          projections: options.projections,
          command: options.command,
          now,
          onArchived: options.onArchived,
          stopped: () => closed,
        });
      }
      options.onPass?.({ madePartitions, ...(archive ? { archive } : {}) });
    } catch (error) {
      options.onError?.(error);
    }
  };
  const runOnce = () => (running = running.then(pass));

  void runOnce();
  const timer = setInterval(() => void runOnce(), options.intervalMs ?? HOUR_MS);
  timer.unref();
  return {
    runOnce,
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
    },
  };
}
