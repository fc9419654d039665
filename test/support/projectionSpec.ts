// Given events, when a projection applies them, then these rows: a read model tested without the ledger, the
// projection runner or the control plane. Events are applied as the runner applies them: to each projection
// only the types it asks for, in the order given, one transaction per `given` (applyPage when the projection
// has it, else apply per event), then afterCommit, then the work that follows pages (afterPages; the runner
// runs it in the background, waitForCaughtUp waits for it). Positions and revisions are made up in that order.
import { randomUUID } from 'node:crypto';
import { beforeAll, afterAll } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import type { EventMetadata, RecordedEvent } from '../../src/ledger/eventStore.ts';
import type { Projection } from '../../src/ledger/projection.ts';
import type { StorageTarget, TestDb } from './databases.ts';

/** An event as a test states it: its type and data, and where it matters its stream, metadata and time. */
export interface GivenEvent {
  type: string;
  data: unknown;
  stream?: string;
  metadata?: EventMetadata;
  /** Shorthand for metadata.occurredAt, which the control-plane read models keep as "when". */
  occurredAt?: string | Date;
}

export interface ProjectionSpec {
  readonly db: Db;
  /** Applies the events (to each projection those of its types) in one transaction; resolves to them as recorded. */
  given(...events: GivenEvent[]): Promise<RecordedEvent[]>;
  /** Same, one event per call to `apply` even when the projection has `applyPage`. */
  givenOneByOne(...events: GivenEvent[]): Promise<RecordedEvent[]>;
  /** The rows a query returns. */
  rows<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Empties the projections' tables, for a test that wants to start from nothing. */
  reset(): Promise<void>;
}

/**
 * Call inside a describe: opens one migrated database for the file's tests (the read-model tables come from
 * migrations/), closes it after. Tests of one file share it; each keeps apart by its own keys or calls reset.
 */
export function useProjectionSpec(target: StorageTarget, ...projections: Projection[]): ProjectionSpec {
  let testDb: TestDb | undefined;
  let position = 0n;
  const revisions = new Map<string, bigint>();

  beforeAll(async () => {
    testDb = await target.open();
  });
  afterAll(async () => {
    await testDb?.dispose();
  });

  const db = () => {
    if (!testDb) throw new Error('the projection spec is open only from beforeAll to afterAll');
    return testDb.db;
  };

  const record = (event: GivenEvent): RecordedEvent => {
    const stream = event.stream ?? 'spec';
    const revision = revisions.get(stream) ?? 0n;
    revisions.set(stream, revision + 1n);
    position++;
    const occurredAt = event.occurredAt instanceof Date ? event.occurredAt.toISOString() : event.occurredAt;
    return {
      id: randomUUID(),
      stream,
      revision,
      position: { commit: position, prepare: position },
      type: event.type,
      data: event.data,
      metadata: { ...event.metadata, ...(occurredAt ? { occurredAt } : {}) },
      recordedAt: occurredAt ? new Date(occurredAt) : new Date(),
    };
  };

  const applyAll = async (events: GivenEvent[], pages: boolean): Promise<RecordedEvent[]> => {
    const recorded = events.map(record);
    const applied = projections.map((projection) => ({ projection, events: recorded.filter((event) => projection.eventTypes.includes(event.type)) }));
    await db().transaction(async (tx) => {
      for (const { projection, events: own } of applied) {
        if (own.length === 0) continue;
        if (pages && projection.applyPage) await projection.applyPage(own, tx);
        else for (const event of own) await projection.apply(event, tx);
      }
    });
    for (const { projection, events: own } of applied) if (own.length > 0) projection.afterCommit?.(own);
    for (const { projection, events: own } of applied) if (own.length > 0) await projection.afterPages?.(db());
    return recorded;
  };

  return {
    get db() {
      return db();
    },
    given: (...events) => applyAll(events, true),
    givenOneByOne: (...events) => applyAll(events, false),
    async rows<Row>(sql: string, params?: readonly unknown[]) {
      return (await db().query<Row>(sql, params)).rows;
    },
    async reset() {
      await db().exec(projections.flatMap((projection) => projection.tables.map((table) => `DELETE FROM ${table};`)).join('\n'));
    },
  };
}
