// Issue 34's reproduction on the machine's Mosquitto, with the ledger on PostgreSQL (PGlite without one): two
// QoS 1 messages to devicechain/acme/pump-1/telemetry, the first with the MQTT 5 user property `sent-at: "1"`,
// the second sent ten seconds ago, once made the Governor merge them into one summary spanning 56 years (the
// trend projection then cut it into ~30 M minute buckets and the service died on every restart). Now a send
// time outside the window (7 days back, 60 s ahead) is metered LIVE at arrival and counted, and every summary
// the ledger holds spans at most the flush interval (1 s).
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { createLedgerRecorder } from '../../../../src/ledger/ledgerRecorder.ts';
import { ADMISSIONS_STREAM } from '../../../../src/ledger/catalog/admissions.ts';
import { createPostgresEventStore } from '../../../../src/ledger/postgres/postgresEventStore.ts';
import type { EventStore } from '../../../../src/ledger/eventStore.ts';
import type { AdmissionSummary } from '../../../../src/governance/index.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../../support/databases.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../../support/mosquitto.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { TableLimitSource } from '../http/frontDoorHarness.ts';
import { startDoor, type DoorUnderTest } from './mqttHarness.ts';
import { admissionSummaryReader } from '../../../../src/ledger/catalog/summaryRefs.ts';

const reachable = await mosquittoReachable('the MQTT send-time suite');

const DAY_MS = 86_400_000;
/** The service's flush interval (the Governor's default): no summary may span more. */
const FLUSH_INTERVAL_SECONDS = 1;

describe.skipIf(!reachable)('MQTT send times outside the window', () => {
  const names = uniqueNames('senttime');
  const topic = `${names.root}/acme/pump-1/telemetry`;
  const body = JSON.stringify({ readings: [{ measurements: { t: 1 } }] });
  let testDb: TestDb;
  let store: EventStore;
  let door: DoorUnderTest;
  let publisher: MqttClient;

  beforeAll(async () => {
    testDb = await (postgresOnly ?? storageTargets[0]!).open();
    store = createPostgresEventStore(testDb.db);
    const limits = new TableLimitSource().tenant('acme', { INGEST: { override: { ratePerSecond: 100, burst: 100 } } });
    door = await startDoor({ ...names, limits, sink: createCountingSink(), ledger: createLedgerRecorder(store) });
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `${names.clientId}-pub`, protocolVersion: 5 });
  }, 180_000);

  afterAll(async () => {
    await publisher?.endAsync();
    await door?.close();
    // Ends the persistent session the door made.
    const cleaner = await mqtt.connectAsync(mqttUrl, { clientId: names.clientId, protocolVersion: 5, clean: true }).catch(() => null);
    await cleaner?.endAsync();
    await store?.close();
    await testDb?.dispose();
  });

  const publish = (sentAt: string) => publisher.publishAsync(topic, body, { qos: 1, properties: { userProperties: { 'sent-at': sentAt } } });

  it('meters sent-at 1, 30 days back and a day ahead at arrival, counts them, and no summary in the ledger spans more than the flush interval (issue 34 reproduction)', async () => {
    const startedMs = Date.now();
    const recentMs = startedMs - 10_000;
    await publish('1');
    await publish(String(recentMs));
    await publish(String(startedMs - 30 * DAY_MS));
    await publish(new Date(startedMs + DAY_MS).toISOString());
    // Inside the window, six days back: BACKLOG at its send time, in a summary of its own (before, it and the
    // message of ten seconds ago made one summary spanning six days).
    const sixDaysBackMs = startedMs - 6 * DAY_MS;
    await publish(String(sixDaysBackMs));
    await waitFor(() => door.consumer.stats().acknowledged === 5, { timeoutMs: 20_000, description: 'the five messages acknowledged' });
    const endedMs = Date.now();
    await door.governor.flush();

    expect(Object.fromEntries(door.outOfWindow)).toEqual({ 'too-old': 2, future: 1 });
    let summaries: AdmissionSummary[] = [];
    await waitFor(
      async () => {
        summaries = (await store.readStream(ADMISSIONS_STREAM))
          .filter((event) => event.type === 'AdmissionsRecorded')
          .flatMap(admissionSummaryReader())
          .filter((entry) => entry.tenantId === 'acme');
        return summaries.filter((each) => each.dimension === 'INGEST').reduce((sum, each) => sum + each.admittedUnits, 0) === 5;
      },
      { timeoutMs: 10_000, description: 'the five readings in the ledger' },
    );
    console.log(`ledger summaries: ${JSON.stringify(summaries.map((each) => [each.allowance, each.fromSecond, each.seconds, each.admittedUnits]))}`);
    for (const summary of summaries) {
      expect(summary.seconds).toBeGreaterThanOrEqual(1);
      expect(summary.seconds).toBeLessThanOrEqual(FLUSH_INTERVAL_SECONDS);
      // Every summary lies between the message sent six days ago and the last arrival: nothing in 1970,
      // nothing 30 days back, nothing a day ahead.
      expect(summary.fromSecond).toBeGreaterThanOrEqual(Math.floor(sixDaysBackMs / 1000));
      expect(summary.fromSecond + summary.seconds - 1).toBeLessThanOrEqual(Math.floor(endedMs / 1000));
    }
    // The messages sent ten seconds and six days ago are the backlog, each at its send time; the three others
    // are LIVE at arrival.
    const backlog = summaries.filter((each) => each.allowance === 'BACKLOG').sort((a, b) => a.fromSecond - b.fromSecond);
    expect(backlog.map((each) => [each.fromSecond, each.admittedUnits])).toEqual([
      [Math.floor(sixDaysBackMs / 1000), 1],
      [Math.floor(recentMs / 1000), 1],
    ]);
    expect(summaries.filter((each) => each.allowance === 'LIVE' && each.dimension === 'INGEST').reduce((sum, each) => sum + each.admittedUnits, 0)).toBe(3);
    expect(door.dropped.size).toBe(0);
  });
});
