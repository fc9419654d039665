import { describe, expect, it } from 'vitest';
import { brokerMessageId } from '../../../../src/doors/pipeline/handOff.ts';
import type { InboundMessage } from '../../../../src/doors/pipeline/brokerConsumer.ts';

const message = (overrides: Partial<InboundMessage> = {}): InboundMessage => ({
  topic: 'devicechain/acme/pump-1/telemetry',
  payload: Buffer.from('{"readings":[{"measurements":{"t":1}}]}'),
  qos: 1,
  session: 'governance-a',
  packetId: 42,
  redelivered: false,
  userProperties: { 'sent-at': '1764400000000' },
  ...overrides,
});

describe('brokerMessageId', () => {
  it('is the same for a redelivery of the message (same session, packet identifier, topic, properties and payload)', () => {
    expect(brokerMessageId(message({ redelivered: true }))).toBe(brokerMessageId(message()));
    expect(brokerMessageId(message())).toMatch(/^mqtt-[A-Za-z0-9_-]{43}$/);
  });

  it('differs when any of them differs', () => {
    const first = brokerMessageId(message());
    for (const other of [
      message({ session: 'governance-b' }),
      message({ packetId: 43 }),
      message({ topic: 'devicechain/acme/pump-2/telemetry' }),
      message({ userProperties: { 'sent-at': '1764400000001' } }),
      message({ userProperties: undefined }),
      message({ payload: Buffer.from('{"readings":[{"measurements":{"t":2}}]}') }),
    ]) {
      expect(brokerMessageId(other)).not.toBe(first);
    }
  });

  it('is fresh for QoS 0, which is never resent', () => {
    expect(brokerMessageId(message({ qos: 0, packetId: undefined }))).not.toBe(brokerMessageId(message({ qos: 0, packetId: undefined })));
  });
});
