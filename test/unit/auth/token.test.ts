import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { mintToken } from '../../../src/auth/token.ts';
import { createTokenVerifier } from '../../../src/auth/verifyToken.ts';

const secret = 'test-secret-of-enough-length-for-hs256';
const verify = createTokenVerifier({ secret });

describe('mintToken and the verifier', () => {
  it('round-trips an operator token to its actor', async () => {
    const token = await mintToken({ secret, role: 'OPERATOR', sub: 'alice', ttl: '1h' });
    expect(await verify(token)).toEqual({ id: 'alice', role: 'OPERATOR' });
  });

  it('binds tenant roles to their tenant', async () => {
    const token = await mintToken({ secret, role: 'TENANT_VIEWER', tenant: 'acme', ttl: 60 });
    expect(await verify(token)).toEqual({ id: 'local-tenant_viewer', role: 'TENANT_VIEWER', tenantId: 'acme' });
  });

  it('refuses to mint a tenant role without a tenant, or a tenant on an instance role', async () => {
    await expect(mintToken({ secret, role: 'TENANT_ADMIN', ttl: 60 })).rejects.toThrow(/needs a tenant/);
    await expect(mintToken({ secret, role: 'AUDITOR', tenant: 'acme', ttl: 60 })).rejects.toThrow(/not bound/);
  });

  it('rejects a wrong signature, an expired token, alg=none and garbage', async () => {
    const wrongKey = await mintToken({ secret: 'another-secret-entirely-different', role: 'OPERATOR', ttl: '1h' });
    const expired = await mintToken({ secret, role: 'OPERATOR', ttl: -10 });
    const unsecured = new UnsecuredJWT({ role: 'OPERATOR' }).setSubject('mallory').setExpirationTime('1h').encode();
    for (const token of [wrongKey, expired, unsecured, 'not.a.jwt', '']) expect(await verify(token)).toMatchObject({ refused: expect.any(String) });
  });

  it('rejects validly signed tokens whose claims name no valid role or no tenant', async () => {
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('x').setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(secret));
    expect(await verify(await sign({ role: 'ROOT' }))).toMatchObject({ refused: expect.any(String) });
    expect(await verify(await sign({ role: 'TENANT_ADMIN' }))).toMatchObject({ refused: expect.any(String) });
    const noExpiry = await new SignJWT({ role: 'OPERATOR' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x').sign(new TextEncoder().encode(secret));
    expect(await verify(noExpiry)).toMatchObject({ refused: expect.any(String) });
  });
});

describe('issuer, audience, lifetime', () => {
  const key = new TextEncoder().encode(secret);
  const now = Math.floor(Date.now() / 1000);

  it('checks issuer and audience when set, and accepts what governance token mints with them', async () => {
    const strict = createTokenVerifier({ secret, issuer: 'https://idp.example', audience: 'governance' });
    const good = await mintToken({ secret, role: 'OPERATOR', sub: 'alice', ttl: '1h', issuer: 'https://idp.example', audience: 'governance' });
    expect(await strict(good)).toEqual({ id: 'alice', role: 'OPERATOR' });
    const evil = await mintToken({ secret, role: 'OPERATOR', ttl: '1h', issuer: 'evil-idp', audience: 'governance' });
    expect(await strict(evil)).toEqual({ refused: expect.stringContaining('iss') });
    const elsewhere = await mintToken({ secret, role: 'OPERATOR', ttl: '1h', issuer: 'https://idp.example', audience: 'billing' });
    expect(await strict(elsewhere)).toEqual({ refused: expect.stringContaining('aud') });
    expect(await strict(await mintToken({ secret, role: 'OPERATOR', ttl: '1h' }))).toMatchObject({ refused: expect.any(String) });
  });

  it('refuses a token living longer than the maximum (24 h by default) or without iat', async () => {
    const sign = (iat: number | undefined, exp: number) => {
      const jwt = new SignJWT({ role: 'OPERATOR' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x').setExpirationTime(exp);
      return (iat === undefined ? jwt : jwt.setIssuedAt(iat)).sign(key);
    };
    expect(await verify(await sign(now, 1e20))).toEqual({ refused: expect.stringContaining('at most 86400 s') });
    expect(await verify(await sign(now, now + 86_401))).toMatchObject({ refused: expect.any(String) });
    expect(await verify(await sign(now, now + 86_400))).toEqual({ id: 'x', role: 'OPERATOR' });
    expect(await verify(await sign(undefined, now + 60))).toMatchObject({ refused: expect.any(String) });
    const short = createTokenVerifier({ secret, maxTtlSeconds: 600 });
    expect(await short(await sign(now, now + 601))).toMatchObject({ refused: expect.stringContaining('600') });
  });

  it('refuses a token issued more than a minute in the future, or issued after it expires (issue 34, item 8)', async () => {
    const sign = (iat: number, exp: number) =>
      new SignJWT({ role: 'OPERATOR' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x').setIssuedAt(iat).setExpirationTime(exp).sign(key);
    const tenYears = 10 * 365 * 86_400;
    // The reported bypass: exp - iat is an hour, but the token lives ten years from now.
    expect(await verify(await sign(now + tenYears - 3600, now + tenYears))).toEqual({ refused: expect.stringContaining('in the future') });
    expect(await verify(await sign(now + 120, now + 3600))).toEqual({ refused: expect.stringContaining('in the future') });
    expect(await verify(await sign(now + 3600, now + 60))).toEqual({ refused: expect.stringContaining('after it expires') });
    // A clock a little ahead of ours is not a forgery: up to 60 s are accepted.
    expect(await verify(await sign(now + 30, now + 3600))).toEqual({ id: 'x', role: 'OPERATOR' });
    const clock = createTokenVerifier({ secret, now: () => (now - 100) * 1000 });
    expect(await clock(await sign(now, now + 3600))).toEqual({ refused: expect.stringContaining('in the future') });
    expect(await clock(await sign(now - 60, now + 3600))).toEqual({ id: 'x', role: 'OPERATOR' });
  });

  it('says when an expired token expired', async () => {
    const expired = await mintToken({ secret, role: 'OPERATOR', ttl: -60 });
    expect(await verify(expired)).toEqual({ refused: expect.stringMatching(/^the bearer token expired at \d{4}-\d\d-\d\dT/) });
    // A forged one learns nothing of the kind.
    const forged = await mintToken({ secret: 'another-secret-entirely-different-0123', role: 'OPERATOR', ttl: -60 });
    expect(await verify(forged)).toEqual({ refused: 'the bearer token is not valid' });
  });

  it('refuses a subject storage could not record as the actor', async () => {
    expect(await verify(await mintToken({ secret, role: 'OPERATOR', sub: 'a\u0000b', ttl: 60 }))).toMatchObject({ refused: expect.any(String) });
  });
});

describe('verification against a JWKS URL', () => {
  let server: Server;
  let jwksUrl: string;
  let privateKey: CryptoKey;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('accepts a token signed by a published key and refuses an HS256 token', async () => {
    const verifyJwks = createTokenVerifier({ jwksUrl });
    const token = await new SignJWT({ role: 'SERVICE' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setSubject('ingest')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expect(await verifyJwks(token)).toEqual({ id: 'ingest', role: 'SERVICE' });
    expect(await verifyJwks(await mintToken({ secret, role: 'OPERATOR', ttl: 60 }))).toMatchObject({ refused: expect.any(String) });
  });
});
