import { describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config.ts';

describe('readSettings', () => {
  it('expires queued commands after an hour unless GOVERNANCE_COMMAND_TTL_SECONDS says otherwise', () => {
    expect(readSettings({}).commandTtlSeconds).toBe(3600);
    expect(readSettings({ GOVERNANCE_COMMAND_TTL_SECONDS: ' 900 ' }).commandTtlSeconds).toBe(900);
  });

  it('refuses a number that is not a whole positive count, naming the variable, instead of meaning "never"', () => {
    for (const bad of ['0', '-5', '1.5', 'one hour', 'Infinity']) {
      expect(() => readSettings({ GOVERNANCE_COMMAND_TTL_SECONDS: bad })).toThrow(/GOVERNANCE_COMMAND_TTL_SECONDS must be a whole number/);
    }
    expect(() => readSettings({ EDGE_IP_RATE_PER_SECOND: '0' })).toThrow(/EDGE_IP_RATE_PER_SECOND/);
  });

  it('reads REDIS_CLUSTER and GOVERNANCE_NATS_REPLICAS, and refuses a Redis key prefix that would move the hash tag', () => {
    expect(readSettings({})).toMatchObject({ redisCluster: false, natsReplicas: undefined, redisKeyPrefix: 'governance:' });
    expect(readSettings({ REDIS_CLUSTER: 'on', GOVERNANCE_NATS_REPLICAS: '3' })).toMatchObject({ redisCluster: true, natsReplicas: 3 });
    for (const bad of ['0', '6', '2.5', 'three']) expect(() => readSettings({ GOVERNANCE_NATS_REPLICAS: bad })).toThrow(/GOVERNANCE_NATS_REPLICAS must be a whole number from 1 to 5/);
    expect(() => readSettings({ REDIS_CLUSTER: 'yes' })).toThrow(/REDIS_CLUSTER must be on or off/);
    expect(() => readSettings({ GOVERNANCE_REDIS_KEY_PREFIX: 'gl{a}:' })).toThrow(/GOVERNANCE_REDIS_KEY_PREFIX must not contain/);
  });

  it('drains for 5 s on SIGTERM unless GOVERNANCE_DRAIN_SECONDS says otherwise; 0 turns the drain off', () => {
    expect(readSettings({}).drainSeconds).toBe(5);
    expect(readSettings({ GOVERNANCE_DRAIN_SECONDS: '0' }).drainSeconds).toBe(0);
    expect(readSettings({ GOVERNANCE_DRAIN_SECONDS: '12' }).drainSeconds).toBe(12);
    for (const bad of ['-1', '1.5', 'soon']) expect(() => readSettings({ GOVERNANCE_DRAIN_SECONDS: bad })).toThrow(/GOVERNANCE_DRAIN_SECONDS must be a whole number/);
  });

  it('reads GOVERNANCE_NICE as a whole number from -20 to 19, unset by default', () => {
    expect(readSettings({}).nice).toBeUndefined();
    expect(readSettings({ GOVERNANCE_NICE: '-5' }).nice).toBe(-5);
    expect(readSettings({ GOVERNANCE_NICE: '19' }).nice).toBe(19);
    for (const bad of ['-21', '20', '1.5', 'high']) expect(() => readSettings({ GOVERNANCE_NICE: bad })).toThrow(/GOVERNANCE_NICE must be a whole number from -20 to 19/);
  });

  it('reads GOVERNANCE_REALTIME_PRIORITY as a whole number from 1 to 99, unset by default', () => {
    expect(readSettings({}).realtimePriority).toBeUndefined();
    expect(readSettings({ GOVERNANCE_REALTIME_PRIORITY: '1' }).realtimePriority).toBe(1);
    expect(readSettings({ GOVERNANCE_REALTIME_PRIORITY: '99' }).realtimePriority).toBe(99);
    for (const bad of ['0', '100', '1.5', 'rr']) expect(() => readSettings({ GOVERNANCE_REALTIME_PRIORITY: bad })).toThrow(/GOVERNANCE_REALTIME_PRIORITY must be a whole number from 1 to 99/);
  });

  it('runs the worker projections in child processes unless GOVERNANCE_PROJECTION_WORKERS says thread or off', () => {
    expect(readSettings({}).projectionWorkers).toBe('process');
    expect(readSettings({ GOVERNANCE_PROJECTION_WORKERS: 'off' }).projectionWorkers).toBe('off');
    expect(readSettings({ GOVERNANCE_PROJECTION_WORKERS: 'on' }).projectionWorkers).toBe('process');
    expect(readSettings({ GOVERNANCE_PROJECTION_WORKERS: 'process' }).projectionWorkers).toBe('process');
    expect(readSettings({ GOVERNANCE_PROJECTION_WORKERS: 'thread' }).projectionWorkers).toBe('thread');
    expect(() => readSettings({ GOVERNANCE_PROJECTION_WORKERS: 'yes' })).toThrow(/process, thread, on \(process\) or off/);
  });

  it('keeps 30 days of raw admission summaries unless GOVERNANCE_LEDGER_RETENTION_DAYS says otherwise, archiving under the data directory', () => {
    expect(readSettings({})).toMatchObject({ ledgerRetentionDays: 30, ledgerArchiveDir: './data/ledger-archive' });
    expect(readSettings({ GOVERNANCE_LEDGER_RETENTION_DAYS: '7', GOVERNANCE_DATA_DIR: '/var/lib/gl/' })).toMatchObject({
      ledgerRetentionDays: 7,
      ledgerArchiveDir: '/var/lib/gl/ledger-archive',
    });
    expect(readSettings({ GOVERNANCE_LEDGER_RETENTION_DAYS: 'forever' }).ledgerRetentionDays).toBeUndefined();
    expect(readSettings({ GOVERNANCE_LEDGER_ARCHIVE_DIR: '/archive', GOVERNANCE_LEDGER_ARCHIVE_COMMAND: 'true' })).toMatchObject({
      ledgerArchiveDir: '/archive',
      ledgerArchiveCommand: 'true',
    });
    for (const bad of ['0', '-1', '1.5', 'never', '36501']) {
      expect(() => readSettings({ GOVERNANCE_LEDGER_RETENTION_DAYS: bad })).toThrow(/GOVERNANCE_LEDGER_RETENTION_DAYS must be a whole number of days from 1 to 36500, or forever/);
    }
  });

  it('reads the device doors’ settings with their defaults', () => {
    const defaults = readSettings({});
    expect(defaults).toMatchObject({ mqttTopicRoot: 'devicechain', mqttShareGroup: 'governance', backlogAfterSeconds: 5, lwm2mEnabled: false, lwm2mPort: 5683 });
    expect(defaults.mqttUrl).toBeUndefined();
    expect(defaults.mqttClientId).toMatch(/^governance-/);
    expect([...defaults.sparkplugGroupTenants]).toEqual([]);
    const set = readSettings({
      MQTT_URL: 'mqtt://127.0.0.1:1883',
      MQTT_TOPIC_ROOT: 'plant',
      GOVERNANCE_BACKLOG_AFTER_SECONDS: '30',
      SPARKPLUG_GROUP_TENANTS: 'line-1=acme, line-2 = globex',
      GOVERNANCE_LWM2M: 'on',
      GOVERNANCE_LWM2M_PORT: '5684',
    });
    expect(set).toMatchObject({ mqttUrl: 'mqtt://127.0.0.1:1883', mqttTopicRoot: 'plant', backlogAfterSeconds: 30, lwm2mEnabled: true, lwm2mPort: 5684 });
    expect(Object.fromEntries(set.sparkplugGroupTenants)).toEqual({ 'line-1': 'acme', 'line-2': 'globex' });
  });

  it('reads the bounds of block-wise LwM2M Sends in flight, with their defaults', () => {
    expect(readSettings({}).lwm2mUploads).toEqual({ perHost: 4, maxUploads: 1024, maxBufferedBytes: 16 * 1024 * 1024, idleMs: 60_000 });
    expect(
      readSettings({
        GOVERNANCE_LWM2M_UPLOADS_PER_ADDRESS: '2',
        GOVERNANCE_LWM2M_UPLOADS_MAX: '10',
        GOVERNANCE_LWM2M_UPLOADS_MAX_BYTES: '65536',
        GOVERNANCE_LWM2M_UPLOAD_IDLE_SECONDS: '5',
      }).lwm2mUploads,
    ).toEqual({ perHost: 2, maxUploads: 10, maxBufferedBytes: 65_536, idleMs: 5_000 });
    expect(() => readSettings({ GOVERNANCE_LWM2M_UPLOADS_MAX_BYTES: '0' })).toThrow(/GOVERNANCE_LWM2M_UPLOADS_MAX_BYTES/);
  });

  it('refuses a topic root that is not one topic level, a bad group map and a port out of range', () => {
    for (const bad of ['a/b', '+', 'dev#']) expect(() => readSettings({ MQTT_TOPIC_ROOT: bad })).toThrow(/MQTT_TOPIC_ROOT/);
    expect(() => readSettings({ SPARKPLUG_GROUP_TENANTS: 'line-1' })).toThrow(/SPARKPLUG_GROUP_TENANTS/);
    expect(() => readSettings({ SPARKPLUG_GROUP_TENANTS: 'a=b=c' })).toThrow(/SPARKPLUG_GROUP_TENANTS/);
    expect(() => readSettings({ GOVERNANCE_LWM2M_PORT: '70000' })).toThrow(/GOVERNANCE_LWM2M_PORT/);
  });

  it('reads GOVERNANCE_GRPC_TOKEN, refusing one under 32 bytes; unset, there is none', () => {
    expect(readSettings({}).grpcToken).toBeUndefined();
    expect(() => readSettings({ GOVERNANCE_GRPC_TOKEN: 'short' })).toThrow(/GOVERNANCE_GRPC_TOKEN must be at least 32 bytes/);
    expect(readSettings({ GOVERNANCE_GRPC_TOKEN: 't'.repeat(32) }).grpcToken).toBe('t'.repeat(32));
  });

  it('refuses a JWT secret under 32 bytes, naming the variable, and reads the token claim settings', () => {
    expect(() => readSettings({ GOVERNANCE_JWT_SECRET: 'a' })).toThrow(/GOVERNANCE_JWT_SECRET must be at least 32 bytes/);
    expect(readSettings({ GOVERNANCE_JWT_SECRET: 'x'.repeat(32) }).jwtSecret).toBe('x'.repeat(32));
    expect(readSettings({}).jwtMaxTtlSeconds).toBe(86_400);
    expect(readSettings({ GOVERNANCE_JWT_MAX_TTL: '30m', GOVERNANCE_JWT_ISSUER: 'https://idp', GOVERNANCE_JWT_AUDIENCE: 'gov' })).toMatchObject({
      jwtMaxTtlSeconds: 1800,
      jwtIssuer: 'https://idp',
      jwtAudience: 'gov',
    });
    expect(() => readSettings({ GOVERNANCE_JWT_MAX_TTL: 'forever' })).toThrow(/GOVERNANCE_JWT_MAX_TTL/);
  });
});
