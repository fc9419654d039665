import { describe, expect, it } from 'vitest';
import { parseTelemetryTopic, telemetrySubscription } from '../../../../src/doors/mqtt/topics.ts';
import { latestReadingTime, meteringFor, sentAtOf } from '../../../../src/doors/mqtt/sendTime.ts';
import { SEND_TIME_MAX_AGE_MS, SEND_TIME_MAX_AHEAD_MS } from '../../../../src/doors/pipeline/index.ts';

describe('MQTT telemetry topics', () => {
  it('subscribes with a shared subscription on <root>/+/+/telemetry', () => {
    expect(telemetrySubscription('devicechain', 'governance')).toBe('$share/governance/devicechain/+/+/telemetry');
  });

  it('reads the tenant and device from <root>/<tenant>/<device>/telemetry', () => {
    expect(parseTelemetryTopic('devicechain/acme/pump-7/telemetry', 'devicechain')).toEqual({ status: 'parsed', tenantId: 'acme', deviceId: 'pump-7' });
  });

  it.each([
    'devicechain/acme/telemetry',
    'other/acme/pump-7/telemetry',
    'devicechain/acme/pump-7/commands',
    'devicechain/acme/pump-7/telemetry/extra',
    'devicechain//pump-7/telemetry',
    'devicechain/ac\uFFFDme/pump-7/telemetry',
    'devicechain/acme/pump\uFFFD/telemetry',
    `devicechain/${'a'.repeat(65)}/pump-7/telemetry`,
  ])('refuses %s', (topic) => {
    expect(parseTelemetryTopic(topic, 'devicechain').status).toBe('invalid');
  });
});

describe('send time and allowance', () => {
  const arrived = Date.parse('2026-12-01T10:00:10Z');

  it('charges a message sent longer ago than the threshold on BACKLOG at its send time', () => {
    const sent = arrived - 6_000;
    expect(meteringFor(sent, arrived, 5_000)).toEqual({ allowance: 'BACKLOG', atMs: sent });
  });

  it('charges a recent, undated or future-dated message on LIVE at arrival', () => {
    expect(meteringFor(arrived - 4_999, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived });
    expect(meteringFor(undefined, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived });
    expect(meteringFor(arrived + 60_000, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived });
  });

  it('meters a send time outside the window (older than 7 days, more than 60 s ahead) at arrival, and says why', () => {
    const day = 86_400_000;
    // The reproduction of issue 34: `sent-at: 1` once merged with a recent send time into a 56-year summary.
    expect(meteringFor(1, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived, outOfWindow: 'too-old' });
    expect(meteringFor(arrived - 30 * day, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived, outOfWindow: 'too-old' });
    expect(meteringFor(arrived - 60_001 - 10 * 365 * day, arrived, 5_000)).toMatchObject({ outOfWindow: 'too-old' });
    expect(meteringFor(arrived + 60_001, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived, outOfWindow: 'future' });
    // The edges are inside.
    expect(meteringFor(arrived - SEND_TIME_MAX_AGE_MS, arrived, 5_000)).toEqual({ allowance: 'BACKLOG', atMs: arrived - SEND_TIME_MAX_AGE_MS });
    expect(meteringFor(arrived + SEND_TIME_MAX_AHEAD_MS, arrived, 5_000)).toEqual({ allowance: 'LIVE', atMs: arrived });
    expect(SEND_TIME_MAX_AGE_MS).toBe(7 * day);
    expect(SEND_TIME_MAX_AHEAD_MS).toBe(60_000);
  });

  it('reads sent-at as Unix ms or an ISO 8601 instant, and nothing else', () => {
    expect(sentAtOf({ 'sent-at': '1796104770000' })).toBe(1796104770000);
    expect(sentAtOf({ 'sent-at': '2026-12-01T10:00:00Z' })).toBe(Date.parse('2026-12-01T10:00:00Z'));
    expect(sentAtOf({ 'sent-at': ['2026-12-01T10:00:00Z', 'ignored'] })).toBe(Date.parse('2026-12-01T10:00:00Z'));
    expect(sentAtOf({ 'sent-at': 'yesterday' })).toBeUndefined();
    expect(sentAtOf({ 'sent-at': '2026-12-01' })).toBeUndefined();
    expect(sentAtOf({})).toBeUndefined();
    expect(sentAtOf(undefined)).toBeUndefined();
  });

  it('takes the newest reading time when no sent-at is given', () => {
    expect(latestReadingTime([{ at: '2026-12-01T10:00:00Z' }, { at: '2026-12-01T10:00:03Z' }, { at: 'not a time' }, {}])).toBe(
      Date.parse('2026-12-01T10:00:03Z'),
    );
    expect(latestReadingTime([{}])).toBeUndefined();
  });
});
