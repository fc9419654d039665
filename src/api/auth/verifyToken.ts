// Turns a bearer token into the Actor that every resolver and command handler sees. Only the signature
// decides: alg=none, a wrong key, an expired or malformed token, or claims that name no valid role all come
// back as `null`, and the request is answered 401 before any resolver runs.
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Actor } from '../../control-plane/actor.ts';
import { isRole, isTenantRole } from './roles.ts';
import { secretKey } from './token.ts';

export type TokenVerifier = (token: string) => Promise<Actor | null>;

export type TokenKeySettings = { secret: string; jwksUrl?: undefined } | { jwksUrl: string; secret?: undefined };

const HMAC_ALGORITHMS = ['HS256'];
const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'];

export function createTokenVerifier(settings: TokenKeySettings): TokenVerifier {
  const verify = verifierFor(settings);
  return async (token) => {
    try {
      return actorFromClaims(await verify(token));
    } catch {
      return null;
    }
  };
}

function verifierFor(settings: TokenKeySettings): (token: string) => Promise<JWTPayload> {
  // An expiry is required: a token that never expires cannot be revoked by waiting.
  const requiredClaims = ['sub', 'exp'];
  if (settings.jwksUrl !== undefined) {
    const jwks = createRemoteJWKSet(new URL(settings.jwksUrl));
    return async (token) => (await jwtVerify(token, jwks, { algorithms: ASYMMETRIC_ALGORITHMS, requiredClaims })).payload;
  }
  const key = secretKey(settings.secret);
  return async (token) => (await jwtVerify(token, key, { algorithms: HMAC_ALGORITHMS, requiredClaims })).payload;
}

function actorFromClaims(claims: JWTPayload): Actor | null {
  const { sub, role, tenant } = claims;
  if (typeof sub !== 'string' || sub === '' || !isRole(role)) return null;
  if (isTenantRole(role)) {
    if (typeof tenant !== 'string' || tenant === '') return null;
    return { id: sub, role, tenantId: tenant };
  }
  return { id: sub, role };
}
