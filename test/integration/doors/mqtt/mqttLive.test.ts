// The MQTT live door on the machine's Mosquitto and NATS: a fleet in a child process publishes at three
// times its tenant's limit while a second tenant publishes within its own; what reaches JetStream is the
// limit over time within the burst, the rest is shed and in the ledger, and the second tenant loses nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { TokenBucket } from '../../../../src/governance/index.ts';
import { createNatsSink } from '../../../../src/doors/pipeline/natsSink.ts';
import type { ReadingSink } from '../../../../src/doors/pipeline/sink.ts';
import { createLedgerRecorder } from '../../../../src/ledger/ledgerRecorder.ts';
import { ADMISSIONS_STREAM, entriesOf, type AdmissionsRecordedData } from '../../../../src/ledger/catalog/admissions.ts';
import { createPostgresEventStore } from '../../../../src/ledger/postgres/postgresEventStore.ts';
import type { EventStore } from '../../../../src/ledger/eventStore.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../../support/databases.ts';
import { mosquittoReachable, uniqueNames } from '../../../support/mosquitto.ts';
import { natsReachable, natsUrl } from '../../../support/nats.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { TableLimitSource } from '../http/frontDoorHarness.ts';
import { batchesIn, runPublisher, startDoor, unitsByTenant, type DoorUnderTest } from './mqttHarness.ts';

const reachable = (await mosquittoReachable('the MQTT live door suite')) && (await natsReachable('the MQTT live door suite'));

const RATE = 40;
const READINGS_PER_MESSAGE = 5;
const SECONDS = 3;

describe.skipIf(!reachable)('MQTT live door', () => {
  const names = uniqueNames('live');
  const stream = `GL_MQTT_LIVE_${names.suffix}`;
  let testDb: TestDb;
  let store: EventStore;
  let sink: ReadingSink;
  let door: DoorUnderTest;
  let nats: NatsConnection;

  beforeAll(async () => {
    // PostgreSQL when the run has it (quicker to open than an embedded PGlite), else PGlite.
    testDb = await (postgresOnly ?? storageTargets[0]!).open();
    store = createPostgresEventStore(testDb.db);
    nats = await connect({ servers: natsUrl });
    sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix: `gltest.${names.suffix}.ingest` });
    const limits = new TableLimitSource()
      .tenant('flood', { INGEST: { override: { ratePerSecond: RATE, burst: RATE } } })
      .tenant('calm', { INGEST: { override: { ratePerSecond: RATE, burst: RATE } } });
    door = await startDoor({ ...names, limits, sink, ledger: createLedgerRecorder(store) });
  }, 180_000);

  afterAll(async () => {
    await door?.close();
    await sink?.close();
    await (await nats?.jetstreamManager())?.streams.delete(stream).catch(() => {});
    await nats?.close();
    await store?.close();
    await testDb?.dispose();
  });

  it('admits the limit over time within the burst at 3x the limit, sheds the rest into the ledger, and leaves a second tenant alone', async () => {
    const [flood, calm] = await Promise.all([
      runPublisher({
        clientId: `${names.clientId}-flood`,
        topics: [`${names.root}/flood/pump-1/telemetry`, `${names.root}/flood/pump-2/telemetry`],
        messagesPerSecond: (3 * RATE) / READINGS_PER_MESSAGE,
        seconds: SECONDS,
        readingsPerMessage: READINGS_PER_MESSAGE,
      }),
      runPublisher({
        clientId: `${names.clientId}-calm`,
        topics: [`${names.root}/calm/valve-1/telemetry`],
        messagesPerSecond: RATE / 2 / READINGS_PER_MESSAGE,
        seconds: SECONDS,
        readingsPerMessage: READINGS_PER_MESSAGE,
      }),
    ]);
    await waitFor(() => door.consumer.stats().acknowledged === flood.published + calm.published, {
      timeoutMs: 20_000,
      description: 'every published message acknowledged',
    });
    await door.governor.flush();

    const units = unitsByTenant(await batchesIn(stream));
    const admitted = units.get('flood') ?? 0;
    const times = door.arrivals.get('flood')!;
    const spanSeconds = (Math.max(...times) - Math.min(...times)) / 1000;
    // A token bucket: at most the burst plus the rate over the time the messages arrived in. How much less
    // depends on how evenly they arrived (a stall on a busy machine lets the bucket fill past what it can
    // hold), so the lower bound is the same bucket replayed over the arrival times the consumer saw; those are
    // read just before the door reads its own clock, so a message or two may fall the other way.
    expect(admitted).toBeLessThanOrEqual(RATE + RATE * spanSeconds + READINGS_PER_MESSAGE);
    const replay = new TokenBucket();
    const replayed = times.filter((at) => replay.take(READINGS_PER_MESSAGE, at, RATE, RATE)).length * READINGS_PER_MESSAGE;
    console.log(`flood: ${flood.readings} readings offered over ${spanSeconds.toFixed(2)} s, ${admitted} admitted, ${replayed} in the replay (limit ${RATE}/s, burst ${RATE})`);
    expect(Math.abs(admitted - replayed)).toBeLessThanOrEqual(2 * READINGS_PER_MESSAGE);
    expect(admitted).toBeLessThan(flood.readings);

    // The second tenant, within its own limit, lost nothing.
    expect(units.get('calm')).toBe(calm.readings);
    expect(door.recorder.sum('calm', 'LIVE', 'shedUnits')).toBe(0);

    // What was not admitted was shed and counted: in the Governor's summaries and in the ledger.
    expect(door.recorder.sum('flood', 'LIVE', 'admittedUnits')).toBe(admitted);
    expect(door.recorder.sum('flood', 'LIVE', 'shedUnits')).toBe(flood.readings - admitted);
    // And in messages: every message not admitted is one refused message (what /metrics' refused_messages_total,
    // the trends' limited and the SustainedRefusals alert count), whichever charge refused it.
    expect(door.recorder.sum('flood', 'LIVE', 'shedMessages')).toBe(flood.published - admitted / READINGS_PER_MESSAGE);
    expect(door.recorder.sum('flood', 'LIVE', 'admittedMessages')).toBe(admitted / READINGS_PER_MESSAGE);
    let ledgerShed = 0;
    await waitFor(
      async () => {
        const events = await store.readStream(ADMISSIONS_STREAM);
        ledgerShed = events
          .flatMap((event) => entriesOf(event.data as AdmissionsRecordedData))
          .filter((entry) => entry.tenantId === 'flood' && entry.allowance === 'LIVE')
          .reduce((sum, entry) => sum + entry.shedUnits, 0);
        return ledgerShed === flood.readings - admitted;
      },
      { timeoutMs: 10_000, description: 'the shed readings in the ledger' },
    );
    expect(ledgerShed).toBe(flood.readings - admitted);
    expect(door.dropped.size).toBe(0);
  });
});
