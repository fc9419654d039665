// The LwM2M door over real UDP: a coap client in a child process registers and Sends SenML JSON and SenML
// CBOR. A wrong key gets 4.01; past the tenant's LWM2M allowance a Send gets 4.29 with Max-Age.
import { encode } from 'cborg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Governor } from '../../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import type { Lwm2mDoor } from '../../../../src/doors/lwm2m/startLwm2mDoor.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../../support/databases.ts';
import { CollectingRecorder, TableLimitSource } from '../http/frontDoorHarness.ts';
import { runClient } from './coapClient.ts';
import { registeredKey, startTestLwm2mDoor } from './lwm2mHarness.ts';
import { knowCeilings } from '../mqtt/mqttHarness.ts';

describe('LwM2M door', () => {
  let testDb: TestDb;
  let door: Lwm2mDoor;
  let sink: CountingSink;
  let key: string;
  const recorder = new CollectingRecorder();
  // A burst of 5 refilled at 1 a second: the last Send of the first test finds the 3 readings it needs only if
  // 3 s passed since the burst was spent, so its 4.29 holds on a slow or busy machine too.
  const limits = new TableLimitSource().tenant('utility', { INGEST: { override: { ratePerSecond: 1, burst: 5 } } })
    .tenant('water', {});
  const governor = new Governor({ limitSource: limits, recorder });
  const dropped: string[] = [];

  beforeAll(async () => {
    testDb = await (postgresOnly ?? storageTargets[0]!).open();
    key = await registeredKey(testDb.db, 'utility', 'meter-1');
    sink = createCountingSink();
    await knowCeilings(governor, ['utility', 'water']);
    door = await startTestLwm2mDoor(testDb.db, governor, sink, (reason) => dropped.push(reason));
  }, 180_000);

  afterAll(async () => {
    await door?.close();
    await governor.close();
    await testDb?.dispose();
  });

  it('answers 4.01 to a wrong key, registers, takes SenML JSON and CBOR, and answers 4.29 with Max-Age past the allowance', async () => {
    const senmlJson = (n: number) => JSON.stringify([{ bn: '/3303/0/', n: '5700', v: 21.5 }, ...Array.from({ length: n - 1 }, (_, i) => ({ n: `57${i}`, v: i }))]);
    const senmlCbor = Buffer.from(encode([{ [-2]: '/3304/0/', 0: '5700', 2: 40.5 }, { 0: '5701', 3: '%RH' }])).toString('base64');
    const answers = await runClient(door.port, [
      { method: 'POST', pathname: '/rd', query: 'ep=meter-1&lt=60&lwm2m=1.1&k=wrong' },
      { method: 'POST', pathname: '/dp', query: 'k=wrong', contentFormat: 'application/senml+json', payload: senmlJson(1) },
      { method: 'POST', pathname: '/rd', query: `ep=meter-1&lt=60&lwm2m=1.1&k=${key}` },
      { method: 'POST', pathname: '/dp', contentFormat: 'application/senml+json', payload: senmlJson(3) },
      { method: 'POST', pathname: '/dp', contentFormat: 'application/senml+cbor', payload: senmlCbor, base64: true },
      { method: 'POST', pathname: '/dp', contentFormat: 'application/senml+json', payload: senmlJson(3) },
    ]);
    expect(answers.map((each) => each.code)).toEqual(['4.01', '4.01', '2.01', '2.04', '2.04', '4.29']);
    expect(answers[2]!.location).toMatch(/^rd\/[0-9a-f]{16}$/);
    expect(answers[5]!.maxAge).toBeGreaterThanOrEqual(1);
    expect(dropped).toEqual(['unauthorized', 'unauthorized']);

    await governor.flush();
    expect(sink.unitsByTenant.get('utility')).toBe(5);
    expect(recorder.sum('utility', 'LWM2M', 'admittedUnits')).toBe(5);
    expect(recorder.sum('utility', 'LWM2M', 'shedUnits') + recorder.sum('utility', 'LWM2M', 'rejectedUnits')).toBe(3);
  });

  it('takes the key on the Send itself, and answers 4.15 to a Send that is not SenML and 4.00 to a broken pack', async () => {
    const tenantKey = await registeredKey(testDb.db, 'water', null);
    const query = `k=${tenantKey}&ep=valve-9`;
    const answers = await runClient(door.port, [
      { method: 'POST', pathname: '/dp', query, contentFormat: 'application/senml+json', payload: '[{"n":"/3311/0/5850","vb":true}]' },
      { method: 'POST', pathname: '/dp', query, contentFormat: 'text/plain;charset=utf-8', payload: 'on' },
      { method: 'POST', pathname: '/dp', query, contentFormat: 'application/senml+json', payload: '[{"n":"x","v":"not a number"}]' },
      { method: 'POST', pathname: '/dp', query: `k=${tenantKey}`, contentFormat: 'application/senml+json', payload: '[]' },
      { method: 'POST', pathname: '/nowhere' },
    ]);
    expect(answers.map((each) => each.code)).toEqual(['2.04', '4.15', '4.00', '4.01', '4.04']);
    expect(answers[2]!.diagnostic).toMatch(/v must be a number/);
    expect(sink.unitsByTenant.get('water')).toBe(1);
  });
});
