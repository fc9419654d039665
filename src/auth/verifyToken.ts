// Turns a bearer token into the Caller that every resolver and command handler sees. Only the signature and
// the registered claims decide: alg=none, a wrong key, an expired or malformed token, a token from another
// issuer or for another audience (when GOVERNANCE_JWT_ISSUER / GOVERNANCE_JWT_AUDIENCE are set), one that
// lives longer than the maximum lifetime (GOVERNANCE_JWT_MAX_TTL, exp - iat; a token without iat has no
// provable lifetime and is refused; one issued in the future, more than MAX_CLOCK_SKEW_SECONDS ahead, or after it
// expires is refused too, or a future iat would stretch exp - iat past the maximum), or claims that name no
// valid role all come back as a TokenRefusal, and
// the request is answered 401 before any resolver runs. The refusal says why in words a client can act on
// (above all when the token expired), never anything about the key.
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyOptions } from 'jose';
import type { Caller } from '../control-plane/index.ts';
import { textProblem } from '../db/storableValues.ts';
import { isRole, isTenantRole } from './roles.ts';
import { secretKey } from './token.ts';

/** Why a token was not accepted: said in the 401 body. */
export interface TokenRefusal {
  refused: string;
}

export type TokenVerifier = (token: string) => Promise<Caller | TokenRefusal>;

export function isRefusal(value: Caller | TokenRefusal): value is TokenRefusal {
  return 'refused' in value;
}

export const DEFAULT_MAX_TOKEN_TTL_SECONDS = 24 * 60 * 60;
/** How far ahead of this host's clock a token's iat may be: the clocks of issuer and service differ a little. */
export const MAX_CLOCK_SKEW_SECONDS = 60;

export interface TokenClaimSettings {
  issuer?: string;
  audience?: string;
  /** The longest exp - iat accepted; default 24 h. */
  maxTtlSeconds?: number;
  /** This host's clock (Unix ms), for the iat check; default Date.now. */
  now?: () => number;
}

export type TokenKeySettings = ({ secret: string; jwksUrl?: undefined } | { jwksUrl: string; secret?: undefined }) & TokenClaimSettings;

const HMAC_ALGORITHMS = ['HS256'];
const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'];
const INVALID: TokenRefusal = { refused: 'the bearer token is not valid' };

export function createTokenVerifier(settings: TokenKeySettings): TokenVerifier {
  const verify = verifierFor(settings);
  const maxTtlSeconds = settings.maxTtlSeconds ?? DEFAULT_MAX_TOKEN_TTL_SECONDS;
  const now = settings.now ?? Date.now;
  return async (token) => {
    let claims: JWTPayload;
    try {
      claims = await verify(token);
    } catch (error) {
      return refusalFor(error);
    }
    if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return { refused: 'the bearer token must carry iat and exp' };
    // exp - iat bounds the lifetime only if iat is the past: a token issued "in ten years" for ten years and an hour
    // would otherwise live ten years from now.
    if (claims.iat > claims.exp) return { refused: 'the bearer token was issued (iat) after it expires (exp)' };
    if (claims.iat > now() / 1000 + MAX_CLOCK_SKEW_SECONDS) {
      return { refused: `the bearer token was issued (iat) in the future; at most ${MAX_CLOCK_SKEW_SECONDS} s of clock skew are accepted` };
    }
    if (claims.exp - claims.iat > maxTtlSeconds) {
      return { refused: `the bearer token lives ${claims.exp - claims.iat} s (exp - iat); at most ${maxTtlSeconds} s are accepted` };
    }
    return actorFromClaims(claims) ?? INVALID;
  };
}

function refusalFor(error: unknown): TokenRefusal {
  // Thrown only once the signature was verified, so saying when it expired tells a forger nothing.
  if (error instanceof errors.JWTExpired) {
    const exp = error.payload.exp;
    return { refused: typeof exp === 'number' ? `the bearer token expired at ${new Date(exp * 1000).toISOString()}` : 'the bearer token expired' };
  }
  if (error instanceof errors.JWTClaimValidationFailed && (error.claim === 'iss' || error.claim === 'aud')) {
    return { refused: `the bearer token's ${error.claim} is not the one this service accepts` };
  }
  return INVALID;
}

function verifierFor(settings: TokenKeySettings): (token: string) => Promise<JWTPayload> {
  // An expiry is required: a token that never expires cannot be revoked by waiting.
  const options: JWTVerifyOptions = { requiredClaims: ['sub', 'exp', 'iat'] };
  if (settings.issuer !== undefined) options.issuer = settings.issuer;
  if (settings.audience !== undefined) options.audience = settings.audience;
  if (settings.jwksUrl !== undefined) {
    const jwks = createRemoteJWKSet(new URL(settings.jwksUrl));
    return async (token) => (await jwtVerify(token, jwks, { ...options, algorithms: ASYMMETRIC_ALGORITHMS })).payload;
  }
  const key = secretKey(settings.secret);
  return async (token) => (await jwtVerify(token, key, { ...options, algorithms: HMAC_ALGORITHMS })).payload;
}

function actorFromClaims(claims: JWTPayload): Caller | null {
  const { sub, role, tenant } = claims;
  // The subject is recorded as the actor of every event the token causes: it must be storable text.
  if (typeof sub !== 'string' || sub === '' || textProblem(sub, 'sub') || !isRole(role)) return null;
  if (isTenantRole(role)) {
    if (typeof tenant !== 'string' || tenant === '' || textProblem(tenant, 'tenant')) return null;
    return { id: sub, role, tenantId: tenant };
  }
  return { id: sub, role };
}
