// Read model: the per-second demand of every tenant, rate dimension and allowance (units and messages offered,
// admitted + shed + rejected, and the part refused then), packed per minute in gl_demand_seconds: what the
// limit preview replays (src/limit-preview/README.md). The trends keep minutes, and a minute's total says
// nothing of how it was spread within it, which is all a token bucket cares about.
//
// It reads every AdmissionsRecorded summary, as the admission trends do, and runs beside them in a worker thread
// of its own on PostgreSQL (workerProjections.ts), paced (LIVE_PACE_MS): a page's seconds of the open minutes are
// packed per shard of tenants, and a minute past is closed into the tenants' rows once
// (src/limit-preview/openDemand.ts), so a tenant's minute row is written once, not once per page. A reference
// whose source the ledger no longer holds is refused (the quarantine), as the trends refuse it; a malformed
// summary is passed over (summaryDemand.ts).
import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { Tx } from '../src/db/db.ts';
import type { AdmissionsRecordedData, Projection, RecordedEvent, Refusal } from '../src/ledger/index.ts';
import { eventData, lookUpSummaryEvent, SummaryKeySources } from '../src/ledger/index.ts';
import { addSummaryDemand, DEMAND_PROJECTION, DemandMinutes, EVERY_REPLAYED_SUMMARY, openFrom, writeDemand } from '../src/limit-preview/index.ts';

/** Events per page, as the admission trends take them (admissionTrends.ts says why). */
const PAGE_EVENTS = 256;

/**
 * Live summaries are applied every 15 s: a minute's row is written once per page, four or five times a minute.
 * At the trends' 2 s (thirty times a minute) this projection's pages cost PostgreSQL 0.6 cores at 100,000
 * active tenants (bench/scale.ts: 0.3 cores with the trends alone, 0.9 with both), and held the trends and the
 * Governor's flushes back. Readers lose nothing by the pace: a preview reads the summaries the projection has
 * not applied from the ledger (src/limit-preview/readDemand.ts), so it sees every recorded second either way.
 */
const LIVE_PACE_MS = 15_000;

/**
 * /readyz calls it behind past a minute (ProjectionLagging's bound) beyond the 5 s of its pace readiness forgives
 * (MAX_FORGIVEN_PACE_SECONDS), not the service's few seconds: its lag makes no preview stale (readDemand.ts reads
 * the rest from the ledger), and a page of 15 s of 100,000 tenants' seconds takes seconds of its own, so a pace
 * plus two pages passed the service's bound.
 */
const READY_LAG_SECONDS = 60;

/**
 * Its thread's nice value (Linux): a page of 15 s of every active tenant's seconds is seconds of parsing and a
 * large statement, and on two cores at 50,000 active tenants the admitting thread waited 60-121 ms for a core
 * while it ran beside the trends' page (bench/scale.ts, BENCH_SCALE_TRACE). At nice 10 the thread gets about a
 * tenth of a core the admitting thread wants too, and every core no one else wants; its lag costs no reader
 * anything (READY_LAG_SECONDS). The trends keep the admitting thread's priority: /readyz holds them to seconds.
 */
const THREAD_NICE = 10;

/** Bytes of seconds collected before they are written: a page of long spans stays bounded in memory. */
const FLUSH_BYTES = 16 * 1024 * 1024;

export const admissionDemandProjection: Projection = {
  name: DEMAND_PROJECTION,
  version: 1,
  eventTypes: ['AdmissionsRecorded'],
  tables: ['gl_demand_seconds', 'gl_demand_open'],
  pageSize: PAGE_EVENTS,
  livePaceMs: LIVE_PACE_MS,
  readyLagSeconds: READY_LAG_SECONDS,
  threadNice: THREAD_NICE,
  readsDataAsJson: true,
  apply: async (event: RecordedEvent, tx: Tx) => {
    const refusals = await applyDemand([event], tx);
    return refusals.length > 0 ? { refused: refusals[0]!.reason } : undefined;
  },
  applyPage: (events: readonly RecordedEvent[], tx: Tx) => applyDemand(events, tx),
};

/** The key sources read so far (src/ledger/catalog/summaryRefs.ts), as the trend projection keeps them. */
const keySources = new SummaryKeySources();

async function applyDemand(events: readonly RecordedEvent[], tx: Tx): Promise<Refusal[]> {
  const refusals: Refusal[] = [];
  if (events.length === 0) return refusals;
  // The minutes still open by the page's newest event (src/limit-preview/openDemand.ts): its seconds from then on
  // are packed per shard, older ones appended to the tenants' rows.
  let newest = events[0]!.recordedAt;
  for (const event of events) if (event.recordedAt > newest) newest = event.recordedAt;
  const from = openFrom(newest);
  let minutes = new DemandMinutes();
  for (const event of events) {
    const stored = eventData(event) as AdmissionsRecordedData;
    keySources.remember(event.id, stored);
    const table = await keySources.decodedOf(stored, (eventId) => lookUpSummaryEvent(tx, eventId));
    if (typeof table === 'string') {
      refusals.push({ event, reason: table });
      continue;
    }
    addSummaryDemand(minutes, table, EVERY_REPLAYED_SUMMARY);
    if (minutes.bytes >= FLUSH_BYTES) {
      await writeDemand(tx, minutes, from);
      minutes = new DemandMinutes();
    }
    // One event's summaries at a time: the thread (or the service's own, on PGlite) turns between them.
    await yieldTurn();
  }
  await writeDemand(tx, minutes, from);
  return refusals;
}
