import { describe, expect, it } from 'vitest';
import { resolveClientIp } from '../../../src/http-server/clientIp.ts';
import { formatIpAddress, parseIpAddress } from '../../../src/http-server/ipAddress.ts';
import { InvalidTrustedProxyCidr, parseTrustedProxies } from '../../../src/http-server/trustedProxies.ts';

const proxies = parseTrustedProxies(['10.0.0.0/8', '192.168.1.7', '2001:db8:aa::/48', '::ffff:172.16.0.0/108']);
const none = parseTrustedProxies([]);

describe('parseIpAddress / formatIpAddress', () => {
  it.each([
    ['1.2.3.4', '1.2.3.4'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8::0:1', '2001:db8::1'],
    ['::1', '::1'],
    ['::', '::'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['::ffff:a01:203', '10.1.2.3'],
    ['2001:db8:0:1:0:0:0:0', '2001:db8:0:1::'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    ['2001:0:0:1:0:0:1:1', '2001::1:0:0:1:1'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['64:ff9b::1.2.3.4', '64:ff9b::102:304'],
  ])('reads %s as %s', (text, canonical) => {
    const parsed = parseIpAddress(text);
    expect(parsed).not.toBeNull();
    expect(formatIpAddress(parsed!)).toBe(canonical);
  });

  it.each(['', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1.2.3.-1', 'a.b.c.d', '1::2::3', '1:2:3:4:5:6:7:8:9',
    '12345::1', 'g::1', ':1::', '1::2:', 'unknown', '1.2.3.4 ', '::ffff:1.2.3.256'])('refuses %j', (text) => {
    expect(parseIpAddress(text)).toBeNull();
  });
});

describe('parseTrustedProxies', () => {
  it.each(['10.0.0.0/33', '10.0.0.0/x', '10.0.0.0/8/1', 'not-an-ip', '2001:db8::/129', '::ffff:10.0.0.0/95'])(
    'refuses %j with a message naming the entry',
    (entry) => {
      expect(() => parseTrustedProxies([entry])).toThrow(InvalidTrustedProxyCidr);
      expect(() => parseTrustedProxies([entry])).toThrow(entry);
    },
  );

  it('matches IPv4 networks, single addresses, IPv6 networks and IPv4 networks written as mapped IPv6', () => {
    const at = (text: string) => proxies.contains(parseIpAddress(text)!);
    expect(at('10.255.0.1')).toBe(true);
    expect(at('11.0.0.1')).toBe(false);
    expect(at('192.168.1.7')).toBe(true);
    expect(at('192.168.1.8')).toBe(false);
    expect(at('2001:db8:aa:ffff::1')).toBe(true);
    expect(at('2001:db8:ab::1')).toBe(false);
    expect(at('172.16.9.9')).toBe(true);
    expect(at('172.32.0.1')).toBe(false);
    expect(at('::ffff:10.0.0.1')).toBe(true);
  });

  it('a /0 trusts a whole family and only that family', () => {
    const all4 = parseTrustedProxies(['0.0.0.0/0']);
    expect(all4.contains(parseIpAddress('8.8.8.8')!)).toBe(true);
    expect(all4.contains(parseIpAddress('2001:db8::1')!)).toBe(false);
  });
});

describe('resolveClientIp', () => {
  it('without trusted proxies the socket address is the client, whatever X-Forwarded-For says', () => {
    expect(resolveClientIp('203.0.113.9', '1.1.1.1', none)).toEqual({ address: '203.0.113.9', limitKey: '203.0.113.9' });
  });

  it('an untrusted peer cannot choose its key by sending X-Forwarded-For', () => {
    expect(resolveClientIp('203.0.113.9', '1.1.1.1, 10.0.0.1', proxies).address).toBe('203.0.113.9');
  });

  it('from a trusted proxy it takes the rightmost untrusted address, not the forgeable leftmost', () => {
    expect(resolveClientIp('10.0.0.2', 'forged-1.1.1.1, 6.6.6.6, 198.51.100.4, 10.0.0.9', proxies).address).toBe('198.51.100.4');
    expect(resolveClientIp('10.0.0.2', '1.1.1.1, 198.51.100.4', proxies).address).toBe('198.51.100.4');
  });

  it('joins repeated X-Forwarded-For headers in order', () => {
    expect(resolveClientIp('10.0.0.2', ['1.1.1.1', '198.51.100.4, 10.0.0.3'], proxies).address).toBe('198.51.100.4');
  });

  it('when every hop is a trusted proxy, the furthest one is the client', () => {
    expect(resolveClientIp('10.0.0.2', '10.1.1.1, 192.168.1.7', proxies).address).toBe('10.1.1.1');
  });

  it('a trusted proxy with no X-Forwarded-For, or an empty one, is itself the client', () => {
    expect(resolveClientIp('10.0.0.2', undefined, proxies).address).toBe('10.0.0.2');
    expect(resolveClientIp('10.0.0.2', '', proxies).address).toBe('10.0.0.2');
  });

  it('stops at an unreadable hop and keys on the trusted proxy that reported it', () => {
    expect(resolveClientIp('10.0.0.2', '198.51.100.4, unknown, 10.0.0.7', proxies).address).toBe('10.0.0.7');
    expect(resolveClientIp('10.0.0.2', 'garbage', proxies).address).toBe('10.0.0.2');
  });

  it('reads ports, brackets, zones, spaces and mapped addresses in hops and on the socket', () => {
    expect(resolveClientIp('::ffff:10.0.0.2', ' 198.51.100.4:5555 ', proxies).address).toBe('198.51.100.4');
    expect(resolveClientIp('10.0.0.2', '[2001:DB8:1::7]:443', proxies).address).toBe('2001:db8:1::7');
    expect(resolveClientIp('10.0.0.2', 'fe80::1%eth0', proxies).address).toBe('fe80::1');
    expect(resolveClientIp('::ffff:203.0.113.9', '1.1.1.1', proxies).address).toBe('203.0.113.9');
  });

  it('walks through IPv6 proxies and mapped-IPv4 proxy networks', () => {
    expect(resolveClientIp('2001:db8:aa::1', '2001:db8:bb::5, 172.16.0.3', proxies).address).toBe('2001:db8:bb::5');
  });

  it('keys IPv6 clients on their /64 and IPv4 clients on the address', () => {
    const a = resolveClientIp('2001:db8:bb:1:aaaa::1', undefined, proxies);
    const b = resolveClientIp('2001:db8:bb:1:ffff::2', undefined, proxies);
    expect(a.limitKey).toBe('2001:db8:bb:1::/64');
    expect(b.limitKey).toBe(a.limitKey);
    expect(a.address).not.toBe(b.address);
    expect(resolveClientIp('203.0.113.9', undefined, none).limitKey).toBe('203.0.113.9');
  });

  it('a missing socket address falls back to one shared key instead of failing', () => {
    expect(resolveClientIp(undefined, '1.1.1.1', proxies)).toEqual({ address: 'unknown', limitKey: 'unknown' });
  });
});
