// The backlog: the consumer is stopped, devices publish QoS 1 into its persistent session, and it starts
// again. The drain is metered on BACKLOG at the times sent (so a fleet that sent within its limit over time
// is admitted over time, not cut to one burst at the drain), and LIVE traffic sent meanwhile keeps its own
// allowance.
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Governor } from '../../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../../support/mosquitto.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { CollectingRecorder, TableLimitSource } from '../http/frontDoorHarness.ts';
import { startDoor, type DoorUnderTest } from './mqttHarness.ts';

const reachable = await mosquittoReachable('the MQTT backlog suite');

const RATE = 20;
const READINGS = 5;
// Live messages carry their real send time: the threshold is wide enough that one handled late on a busy
// machine is still LIVE.
const BACKLOG_AFTER_MS = 3_000;

describe.skipIf(!reachable)('MQTT backlog drain', () => {
  const names = uniqueNames('backlog');
  const topic = `${names.root}/drain/pump-1/telemetry`;
  const recorder = new CollectingRecorder();
  const limits = new TableLimitSource().tenant('drain', { INGEST: { override: { ratePerSecond: RATE, burst: RATE } } });
  const governor = new Governor({ limitSource: limits, recorder });
  let sink: CountingSink;
  let door: DoorUnderTest | undefined;
  let publisher: MqttClient;

  beforeAll(async () => {
    sink = createCountingSink();
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `${names.clientId}-pub`, protocolVersion: 5 });
  });

  afterAll(async () => {
    await publisher?.endAsync();
    await door?.close();
    await governor.close();
    // Ends the persistent session the test made.
    const cleaner = await mqtt.connectAsync(mqttUrl, { clientId: names.clientId, protocolVersion: 5, clean: true }).catch(() => null);
    await cleaner?.endAsync();
  });

  const body = JSON.stringify({ readings: [{ measurements: Object.fromEntries(Array.from({ length: READINGS }, (_, i) => [`m${i}`, i])) }] });
  const publish = (sentAtMs: number) => publisher.publishAsync(topic, body, { qos: 1, properties: { userProperties: { 'sent-at': String(sentAtMs) } } });

  it('drains the stored messages on BACKLOG at their send times while LIVE keeps its own allowance', async () => {
    // The session exists once the consumer has subscribed; stopping it leaves the broker queueing for it.
    door = await startDoor({ ...names, limits, sink, governor, backlogAfterMs: BACKLOG_AFTER_MS });
    await door.close();

    // Twice the limit for two seconds while the consumer is away.
    const sentTimes: number[] = [];
    const started = Date.now();
    const messages = (2 * RATE * 2) / READINGS;
    for (let i = 0; i < messages; i++) {
      const due = started + (i * 2000) / messages;
      if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      // Stamped with the time planned, not the time reached: the bounds below are about how the drain meters
      // send times, and must not move when a publish is late.
      const sentAt = due;
      sentTimes.push(sentAt);
      await publish(sentAt);
    }
    const backlogReadings = messages * READINGS;
    await waitFor(() => Date.now() - sentTimes.at(-1)! > BACKLOG_AFTER_MS, { description: 'the last stored message to age past the threshold' });

    door = await startDoor({ ...names, limits, sink, governor, backlogAfterMs: BACKLOG_AFTER_MS });
    // Live traffic while the drain runs: within the limit, sent now.
    for (let i = 0; i < 3; i++) await publish(Date.now());
    await waitFor(() => door!.consumer.stats().acknowledged === messages + 3, { timeoutMs: 20_000, description: 'the backlog and the live messages acknowledged' });
    await governor.flush();

    const backlog = recorder.admissions.filter((each) => each.tenantId === 'drain' && each.allowance === 'BACKLOG');
    const admitted = recorder.sum('drain', 'BACKLOG', 'admittedUnits');
    const shed = recorder.sum('drain', 'BACKLOG', 'shedUnits');
    const spanSeconds = (sentTimes.at(-1)! - sentTimes[0]!) / 1000;
    console.log(`backlog: ${backlogReadings} readings sent over ${spanSeconds.toFixed(2)} s, ${admitted} admitted on BACKLOG, ${shed} shed`);
    // Metered at the send times: the seconds recorded are the seconds the messages were sent in, and the
    // bucket refilled between them, so more than one burst was admitted.
    for (const each of backlog) {
      expect(each.fromSecond).toBeGreaterThanOrEqual(Math.floor(sentTimes[0]! / 1000));
      expect(each.fromSecond + each.seconds - 1).toBeLessThanOrEqual(Math.floor(sentTimes.at(-1)! / 1000));
    }
    expect(admitted).toBeGreaterThanOrEqual(RATE + RATE * spanSeconds - 2 * READINGS);
    expect(admitted).toBeLessThanOrEqual(RATE + RATE * spanSeconds + READINGS);
    expect(admitted + shed).toBe(backlogReadings);
    // The live messages were neither charged on BACKLOG nor cut by the drain.
    expect(recorder.sum('drain', 'LIVE', 'admittedUnits')).toBe(3 * READINGS);
    expect(recorder.sum('drain', 'LIVE', 'shedUnits')).toBe(0);
    expect(sink.unitsByTenant.get('drain')).toBe(admitted + 3 * READINGS);
  });
});
