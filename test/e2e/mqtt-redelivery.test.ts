// A redelivered MQTT message is charged once: the service as a process of its own on a PostgreSQL schema of the
// suite's own, a NATS and a Mosquitto (persistent sessions, persistence on) of the suite's own, killed with
// SIGKILL and started again on the same MQTT session, which the broker resends its unacknowledged QoS 1
// messages on (DUP).
// 1. The reproduction: NATS down, three messages in the door's hands (held and retried), the service
//    killed, NATS back, the service started: the ledger holds 3 admitted units for the 3 messages (it held 4:
//    the readings were counted when charged, and charged again when redelivered), and the stream 3 batches.
// 2. Killed mid-traffic: what the stream holds is every message exactly once (a message stored whose PUBACK
//    was lost is redelivered under the same JetStream message ID and dropped as a duplicate), and the ledger
//    never counts more units than messages (a kill loses the tallies of its last flush, about a second: at
//    most once, README.md of src/doors/pipeline).
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import { afterAll, describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openDb } from '../../src/db/open.ts';
import { DEFAULT_INGEST_STREAM } from '../../src/doors/pipeline/natsSink.ts';
import type { AcceptedBatch } from '../../src/doors/pipeline/sink.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { openEventStore } from '../../src/ledger/openEventStore.ts';
import { admissionEntriesOf } from '../support/readLedger.ts';
import { serviceModes } from '../support/serviceModes.ts';
import { startPrivateMosquitto, startPrivateNats, type PrivateServer } from '../support/privateServers.ts';
import { operatorMutations } from '../support/operatorMutations.ts';
import { serveTs, serviceProcessEnv, type SpawnedTs } from '../support/spawnTs.ts';
import { waitFor } from '../support/waitFor.ts';

const JWT_SECRET = 'redelivery-suite-secret-0123456789abcdef0123456789';
const postgresMode = serviceModes('e2e_redelivery').find((mode) => mode.name === 'PostgreSQL');

const [nats, mosquitto] = postgresMode ? await Promise.all([startPrivateNats(), startPrivateMosquitto({ logEveryPacket: true })]) : [undefined, undefined];
const missing = Object.entries({ PostgreSQL: postgresMode, 'nats-server': nats, mosquitto })
  .filter(([, server]) => !server)
  .map(([name]) => name);
if (missing.length > 0) {
  console.warn(`the MQTT redelivery suite is skipped: no ${missing.join(', ')} (DATABASE_URL for PostgreSQL; the others are started privately)`);
  await Promise.all([nats?.dispose(), mosquitto?.dispose()]);
}

describe.skipIf(missing.length > 0)('MQTT redelivery after the service is killed (private NATS and Mosquitto)', () => {
  const natsServer = nats as PrivateServer;
  const broker = mosquitto as PrivateServer;
  const mode = postgresMode!;
  const suffix = randomBytes(4).toString('hex');
  const children: ChildProcess[] = [];
  let dataDir: string | undefined;
  let publisher: MqttClient | undefined;
  let reader: NatsConnection | undefined;

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await publisher?.endAsync();
    await reader?.close();
    await Promise.all([natsServer.dispose(), broker.dispose()]);
    await mode.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('charges each redelivered message once and stores it once', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-redelivery-'));
    await mode.prepare();
    const env = await serviceProcessEnv({ ...mode.env, NATS_URL: natsServer.url, MQTT_URL: broker.url, MQTT_CLIENT_ID: `gl-redelivery-${suffix}` }, dataDir, JWT_SECRET);
    const settings = readSettings(env);
    const setupDb = await openDb(settings);
    await migrate(setupDb);
    await setupDb.close();
    const baseUrl = `http://127.0.0.1:${env.PORT}`;

    const start = async () => {
      const service = await serveTs(env);
      children.push(service.child);
      return service;
    };
    const kill = async (service: SpawnedTs) => {
      service.child.kill('SIGKILL');
      await service.exited;
    };

    let service = await start();
    const mutate = await operatorMutations(baseUrl, JWT_SECRET, 'redelivery-suite');
    await mutate('defineTier', { tierId: 'standard', name: 'Standard' });
    await mutate('registerTenant', { tenantId: 'acme', tierId: 'standard' });
    await mutate('setTenantOverride', { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 10_000, burst: 10_000, reason: 'redelivery: no limit hits' });
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, description: '/readyz 200' });

    publisher = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: `gl-redelivery-pub-${suffix}` });
    reader = await connect({ servers: natsServer.url, maxReconnectAttempts: -1 });
    const topic = 'devicechain/acme/pump-1/telemetry';
    // The broker's PUBACK reason codes, by code: 16 (no matching subscribers) would say it dropped a message.
    const pubackCodes = new Map<number, number>();
    publisher.on('packetreceive', (packet) => {
      if (packet.cmd !== 'puback') return;
      const code = packet.reasonCode ?? 0;
      pubackCodes.set(code, (pubackCodes.get(code) ?? 0) + 1);
    });
    const publish = (t: number) => publisher!.publishAsync(topic, JSON.stringify({ readings: [{ measurements: { t } }] }), { qos: 1 });
    const storedTs = async () => {
      const jsm = await reader!.jetstreamManager();
      const info = await jsm.streams.info(DEFAULT_INGEST_STREAM.stream).catch(() => undefined);
      const ts: number[] = [];
      for (let seq = 1; seq <= (info?.state.last_seq ?? 0); seq++) {
        const message = await jsm.streams.getMessage(DEFAULT_INGEST_STREAM.stream, { seq }).catch(() => undefined);
        if (!message) continue;
        const batch = JSONCodec<AcceptedBatch>().decode(message.data);
        for (const item of batch.items) ts.push((item.measurements as { t: number }).t);
      }
      return ts;
    };
    const admittedUnits = async () => {
      const db = await openDb(settings);
      const store = await openEventStore(db, undefined);
      try {
        return admissionEntriesOf(await store.readStream(ADMISSIONS_STREAM))
          .filter((entry) => entry.tenantId === 'acme' && entry.dimension === 'INGEST' && entry.allowance === 'LIVE')
          .reduce((sum, entry) => sum + entry.admittedUnits, 0);
      } finally {
        await store.close();
        await db.close();
      }
    };

    // 1. Three messages held through a NATS outage when the service is killed.
    await natsServer.stop();
    for (const t of [1, 2, 3]) await publish(t);
    await waitFor(() => service.output().includes('the message is held and tried again'), { timeoutMs: 30_000, description: 'the door holding a message' });
    // Past two flushes of the Governor (1 s apart): a charge counted when it was made would be in the ledger now.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await kill(service);
    await natsServer.start();
    service = await start();
    await waitFor(async () => (await storedTs()).length >= 3, { timeoutMs: 60_000, intervalMs: 250, description: 'the three messages in the stream' });
    await waitFor(async () => (await admittedUnits()) >= 3, { timeoutMs: 30_000, intervalMs: 250, description: 'the three charges in the ledger' });
    // Flushes go on every second: nothing more may come.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await storedTs()).sort()).toEqual([1, 2, 3]);
    expect(await admittedUnits()).toBe(3);

    // 2. Killed mid-traffic, started again while the traffic goes on.
    const traffic = Array.from({ length: 300 }, (_, i) => 100 + i);
    let sent = 0;
    const sentAt: number[] = [];
    const publishing = (async () => {
      for (const t of traffic) {
        await publish(t);
        sent++;
        sentAt.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    await waitFor(() => sent >= 100, { timeoutMs: 60_000, description: '100 messages published' });
    const killedAt = Date.now();
    await kill(service);
    const killedAfter = sent;
    service = await start();
    await publishing;
    await waitFor(async () => new Set(await storedTs()).size >= 3 + traffic.length, {
      timeoutMs: 120_000,
      intervalMs: 500,
      description: 'every message of the traffic in the stream',
    }).catch(async (error: unknown) => {
      // Which messages never came, and what the service said: a rare failure under a loaded CI run.
      const stored = new Set(await storedTs());
      const absent = traffic.filter((t) => !stored.has(t));
      // The door's own counts: whether the absent messages reached the service at all.
      const metrics = await fetch(`${baseUrl}/metrics`)
        .then((response) => response.text())
        .then((text) => text.split('\n').filter((line) => /^devicechain_\w*?_(door_|governance_admitted_units_total|governance_(shed|rejected)_units_total)/.test(line)).join('\n'))
        .catch((failure: unknown) => `no /metrics: ${String(failure)}`);
      // The broker's side of the consumer's session: what it last sent the consumer and took from it.
      const consumerId = `gl-redelivery-${suffix}`;
      const brokerLines = broker
        .log()
        .split('\n')
        .filter((line) => line.includes(consumerId))
        .slice(-60)
        .join('\n');
      throw new Error(
        `${String(error)}; killed after ${killedAfter} of ${traffic.length} sent; absent: ${absent.join(',')}; PUBACK reason codes ${JSON.stringify([...pubackCodes])}\n${metrics}\n${service.output().slice(-4000)}\nthe broker, on ${consumerId}:\n${brokerLines}`,
      );
    });
    service.child.kill('SIGTERM');
    expect(await service.exited, service.output()).toBe(0);

    const ts = await storedTs();
    const times = new Map<number, number>();
    for (const t of ts) times.set(t, (times.get(t) ?? 0) + 1);
    expect([...times].filter(([, n]) => n > 1)).toEqual([]);
    expect(ts.length).toBe(3 + traffic.length);
    const admitted = await admittedUnits();
    // docs/faults.md: a process killed outright loses the decisions of about one flush interval (1 s) plus one
    // append; the messages published in the 2 s before the kill bound what it was deciding then.
    const lastTwoSeconds = sentAt.filter((at) => at > killedAt - 2_000 && at <= killedAt).length;
    console.log(
      `killed after ${killedAfter} of ${traffic.length} messages: ${ts.length - 3} stored once each; ${admitted - 3} admitted units in the ledger (${lastTwoSeconds} published in the 2 s before the kill)`,
    );
    expect(admitted).toBeLessThanOrEqual(3 + traffic.length);
    expect(admitted).toBeGreaterThanOrEqual(3 + traffic.length - lastTwoSeconds);
  }, 600_000);
});
