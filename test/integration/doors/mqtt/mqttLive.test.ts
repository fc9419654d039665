// The MQTT live door on the machine's Mosquitto and NATS: a fleet in a child process publishes at three
// times its tenant's limit while a second tenant publishes within its own; what reaches JetStream is the
// limit over time within the burst, the rest is shed and in the ledger, and the second tenant loses nothing.
// The live run's lower bound replays a TokenBucket over the arrivals (the code checked against itself), so a
// second suite scripts the arrivals on the door's own clock and checks counts worked out by hand.
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { TokenBucket } from '../../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { createNatsSink } from '../../../../src/doors/pipeline/natsSink.ts';
import type { ReadingSink } from '../../../../src/doors/pipeline/sink.ts';
import { createLedgerRecorder } from '../../../../src/ledger/ledgerRecorder.ts';
import { ADMISSIONS_STREAM } from '../../../../src/ledger/catalog/admissions.ts';
import { createPostgresEventStore } from '../../../../src/ledger/postgres/postgresEventStore.ts';
import type { EventStore } from '../../../../src/ledger/eventStore.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../../support/databases.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../../support/mosquitto.ts';
import { natsReachable, natsUrl } from '../../../support/nats.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { TableLimitSource } from '../http/frontDoorHarness.ts';
import { batchesIn, runPublisher, startDoor, unitsByTenant, type DoorUnderTest } from './mqttHarness.ts';
import { admissionSummaryReader } from '../../../../src/ledger/catalog/summaryRefs.ts';

const brokerReachable = await mosquittoReachable('the MQTT live door suites');
const reachable = brokerReachable && (await natsReachable('the MQTT live door suite'));

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
          .flatMap(admissionSummaryReader())
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

/**
 * The scripted arrivals, in ms after the script's start, and the counts they must give, worked out by hand for
 * a token bucket of RATE = 40 readings/s, burst 40, starting full, each message 5 readings (all or nothing):
 *
 * A. 10 messages at 0 ms: the full bucket (40) takes 8 of them (40 readings); 2 are shed. Tokens: 0.
 * B. 20 messages, one every 50 ms from 50 to 1,000 ms: each 50 ms adds 50 x 40 / 1000 = 2 tokens.
 *      ms      50  100 150 200 250 300 350 400 450 500 550 600 650 700 750 800 850 900 950 1000
 *      tokens   2   4   6   3   5   2   4   6   3   5   2   4   6   3   5   2   4   6   3   5
 *      taken    -   -   5   -   5   -   -   5   -   5   -   -   5   -   5   -   -   5   -   5
 *    (tokens before the message; a shed message takes nothing). 8 admitted, 12 shed; 0 tokens left at 1,000 ms.
 * C. 10 messages at 3,000 ms: 2,000 ms add 80 tokens, capped at the burst: 40, so 8 admitted, 2 shed.
 *
 * In all: 40 messages (200 readings); 24 admitted (120 readings), 16 shed (80 readings). The message charge
 * (1 a message, the same 40/s and burst 40) never runs dry: at most 10 messages arrive at once and 20/s after.
 */
const SCRIPT_MS = [...Array<number>(10).fill(0), ...Array.from({ length: 20 }, (_, i) => 50 * (i + 1)), ...Array<number>(10).fill(3_000)];
const SCRIPT_EXPECTED = { admittedReadings: 120, shedReadings: 80, admittedMessages: 24, shedMessages: 16 };
const SCRIPT_AT_PROPERTY = 'script-at-ms';

describe.skipIf(!brokerReachable)('MQTT live door on the test\'s clock', () => {
  const names = uniqueNames('script');
  let sink: CountingSink;
  let door: DoorUnderTest;
  let publisher: mqtt.MqttClient;

  beforeAll(async () => {
    sink = createCountingSink();
    const limits = new TableLimitSource().tenant('script', { INGEST: { override: { ratePerSecond: RATE, burst: RATE } } });
    // Each message carries its scripted instant; the door meters it at that instant, whenever it arrives.
    door = await startDoor({
      ...names,
      limits,
      sink,
      messageClock: (message) => Number(message.userProperties?.[SCRIPT_AT_PROPERTY]),
    });
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `${names.clientId}-script`, protocolVersion: 5, reconnectPeriod: 0 });
  }, 60_000);

  afterAll(async () => {
    await publisher?.endAsync();
    await door?.close();
    await sink?.close();
  });

  it('admits exactly the hand-worked counts for a burst, a steady trickle and a burst after a pause', async () => {
    // A whole second, so every scripted instant and every difference between two is a whole number of ms.
    const startMs = Math.floor(Date.now() / 1000) * 1000;
    const measurements = Object.fromEntries(Array.from({ length: READINGS_PER_MESSAGE }, (_, m) => [`m${m}`, m]));
    // One at a time, each acknowledged before the next: the broker hands them to the door in this order.
    for (const offsetMs of SCRIPT_MS) {
      await publisher.publishAsync(`${names.root}/script/pump-1/telemetry`, JSON.stringify({ readings: [{ measurements }] }), {
        qos: 1,
        properties: { userProperties: { [SCRIPT_AT_PROPERTY]: String(startMs + offsetMs) } },
      });
    }
    await waitFor(() => door.consumer.stats().acknowledged === SCRIPT_MS.length, { timeoutMs: 20_000, description: 'every scripted message acknowledged' });
    await door.governor.flush();

    expect(door.arrivals.get('script')).toEqual(SCRIPT_MS.map((offsetMs) => startMs + offsetMs));
    expect(door.recorder.sum('script', 'LIVE', 'admittedUnits')).toBe(SCRIPT_EXPECTED.admittedReadings);
    expect(door.recorder.sum('script', 'LIVE', 'shedUnits')).toBe(SCRIPT_EXPECTED.shedReadings);
    expect(door.recorder.sum('script', 'LIVE', 'admittedMessages')).toBe(SCRIPT_EXPECTED.admittedMessages);
    expect(door.recorder.sum('script', 'LIVE', 'shedMessages')).toBe(SCRIPT_EXPECTED.shedMessages);
    // What was admitted reached the sink, and nothing else did.
    expect(sink.unitsByTenant.get('script')).toBe(SCRIPT_EXPECTED.admittedReadings);
    expect(door.dropped.size).toBe(0);
  });
});
