// The HTTP door's client addresses (src/doors/http/frontDoor.ts): X-Forwarded-For values resolved lately are
// remembered with the proxy's address they were resolved for, and give what resolveClientIp gives, never a
// client resolved for another peer.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createClientResolver } from '../../../../src/doors/http/frontDoor.ts';
import { resolveClientIp } from '../../../../src/http-server/clientIp.ts';
import { parseTrustedProxies } from '../../../../src/http-server/trustedProxies.ts';

const trustedProxies = parseTrustedProxies(['10.0.0.0/8']);

/** A request as the resolver reads it: its headers and its socket's peer address. */
const request = (peer: string, forwardedFor?: string | string[]) =>
  ({ headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }, socket: { remoteAddress: peer } }) as unknown as IncomingMessage;

describe('the HTTP door\'s client resolver', () => {
  it('answers what resolveClientIp answers for each peer and X-Forwarded-For, remembered or not', () => {
    const clients = createClientResolver({ trustedProxies });
    const cases: [string, string | string[] | undefined][] = [
      ['10.0.0.1', '203.0.113.7'],
      ['10.0.0.1', '203.0.113.7'],
      // The same header from a peer that is not a trusted proxy: the peer is the client, whatever was remembered.
      ['198.51.100.9', '203.0.113.7'],
      ['10.0.0.2', '203.0.113.7'],
      ['10.0.0.1', '203.0.113.7, 10.0.0.5'],
      ['10.0.0.1', 'not-an-address'],
      ['10.0.0.1', '2001:db8::1'],
      ['10.0.0.1', ['203.0.113.8', '10.0.0.6']],
      ['10.0.0.1', `${'1.2.3.4, '.repeat(40)}5.6.7.8`],
      ['10.0.0.1', undefined],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [peer, forwardedFor] of cases) {
        expect(clients.of(request(peer, forwardedFor)), `${peer} ${String(forwardedFor)}`).toEqual(resolveClientIp(peer, forwardedFor, trustedProxies));
      }
    }
    expect(clients.of(request('198.51.100.9', '203.0.113.7')).address).toBe('198.51.100.9');
    expect(clients.of(request('10.0.0.1', '203.0.113.7')).address).toBe('203.0.113.7');
  });

  it('answers each value rightly past the bound of values it remembers', () => {
    const clients = createClientResolver({ trustedProxies });
    for (let i = 0; i < 10_000; i++) {
      const forwardedFor = `198.18.${(i >> 8) & 255}.${i & 255}`;
      expect(clients.of(request('10.0.0.1', forwardedFor)).address).toBe(forwardedFor);
    }
  });
});
