// The sheds publisher reads the admission-trends events it is handed only while someone subscribes: the
// projection reads them as JSON text, and parsing every one for nobody doubled the projection's reading. The
// exception is a summary table, whose keys later references name (src/ledger/catalog/summaryRefs.ts): it is
// read for its keys. A reference is left unread while nobody subscribes.
import { describe, expect, it } from 'vitest';
import { createApiPubSub } from '../../../src/api/pubsub.ts';
import { publishingSheds } from '../../../src/api/publishers.ts';
import { ADMISSION_FIELDS, summaryRow } from '../../../src/ledger/catalog/admissions.ts';
import type { Projection, RecordedEvent } from '../../../src/ledger/index.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

const projection: Projection = { name: 'admission-trends', version: 1, eventTypes: ['AdmissionsRecorded'], tables: [], apply: async () => {} };

function eventOf(dataJson: string): RecordedEvent {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    stream: 'governance-admissions',
    revision: 0n,
    position: { commit: 1n, prepare: 1n },
    type: 'AdmissionsRecorded',
    data: null,
    dataJson,
    metadata: {},
    recordedAt: new Date(0),
  };
}

describe('sheds publisher', () => {
  it('leaves the events unread while nobody subscribes, and publishes the sheds of JSON text once someone does', async () => {
    const pubsub = createApiPubSub();
    const published = publishingSheds(projection, pubsub);
    // A reference that is not JSON at all: reading it would throw.
    expect(() => published.afterCommit!([eventOf('{"keysOf": not json')])).not.toThrow();
    expect(pubsub.listening('sheds')).toBe(false);

    const subscription = pubsub.subscribe('sheds', 'acme')[Symbol.asyncIterator]();
    const next = subscription.next();
    await Promise.resolve();
    expect(pubsub.listening('sheds')).toBe(true);
    const shed = admissionSummary({ fromSecond: 1_790_000_000, shedUnits: 4, unauthenticatedUnits: 0, unauthenticatedMessages: 0 });
    published.afterCommit!([eventOf(JSON.stringify({ fields: ADMISSION_FIELDS, rows: [summaryRow(ADMISSION_FIELDS, shed)] }))]);
    expect((await next).value).toEqual(shed);
    await subscription.return!();
    expect(pubsub.listening('sheds')).toBe(false);
  });
});
