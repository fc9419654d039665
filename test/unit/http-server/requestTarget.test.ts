import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { requestTarget } from '../../../src/http-server/server.ts';

const targetOf = (url: string, host = 'localhost:8080') => requestTarget({ url, headers: { host } } as IncomingMessage);
const pathnameOf = (url: string) => {
  const target = targetOf(url);
  if (typeof target === 'string') throw new Error(target);
  return target.pathname;
};

describe('requestTarget', () => {
  it('gives the path a URL parser gives, whether or not it parsed one', () => {
    // Plain paths (no URL parsed) and paths the parser changes: dot segments, escapes, queries, backslashes.
    const paths = [
      '/v1/ingest/acme',
      '/v1/ingest/acme.io',
      '/v1/ingest/a:b@c!$&\'()*+,;=~_-',
      '//v1//ingest/',
      '/v1/ingest/../admissions',
      '/v1/ingest/./acme',
      '/v1/ingest/..',
      '/v1/ingest/.',
      '/v1/ingest/%2e%2e/x',
      '/v1/ingest/acme?x=1',
      '/v1/ingest/acme#top',
      '/v1/ingest/ac me',
      '/v1/ingest/ac\\me',
      '/v1/ingest/äcme',
      '/v1/ingest/{acme}|^`"<>',
      '/v1/ingest/.hidden/..x/x..',
    ];
    for (const path of paths) expect(pathnameOf(path), path).toBe(new URL(`http://localhost${path}`).pathname);
  });

  it('agrees with the URL parser on random paths', () => {
    const alphabet = "abz09-._~!$&'()*+,;=:@/%?#\\ äE{}|^`\"<>\t";
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 2_000; i++) {
      let path = '/';
      const length = next() % 12;
      for (let j = 0; j < length; j++) path += alphabet[next() % alphabet.length];
      expect(pathnameOf(path), path).toBe(new URL(`http://localhost${path}`).pathname);
    }
  });

  it('refuses a Host that is not a host, also after a valid one was seen', () => {
    expect(typeof targetOf('/healthz', 'example.com')).toBe('object');
    expect(targetOf('/healthz', 'exa mple.com')).toBe('the Host header is not a valid host');
    expect(targetOf('/healthz', 'example.com/path')).toBe('the Host header is not a valid host');
    expect(typeof targetOf('/healthz', 'example.com')).toBe('object');
  });

  it('rewrites the absolute form to a path, and refuses a target that is neither', () => {
    const req = { url: 'http://example.com/v1/ingest/acme?x=1', headers: { host: 'example.com' } } as IncomingMessage;
    expect(requestTarget(req)).toMatchObject({ pathname: '/v1/ingest/acme' });
    expect(req.url).toBe('/v1/ingest/acme?x=1');
    expect(targetOf('*')).toBe('the request target must be a path such as /graphql');
  });
});
