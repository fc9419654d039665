// Mints HS256 tokens for local use (`governance token`). Production callers get tokens from their identity
// provider and the API verifies them against GOVERNANCE_JWKS_URL instead.
import { SignJWT } from 'jose';
import type { Role } from '../control-plane/index.ts';
import { isTenantRole } from './roles.ts';

export interface MintTokenOptions {
  secret: string;
  role: Role;
  /** Required for TENANT_ADMIN and TENANT_VIEWER, refused for every other role. */
  tenant?: string;
  /** Who the token names; recorded as the actor of what it changes. Defaults to `local-<role>`. */
  sub?: string;
  /** Lifetime: seconds, or a jose time span such as '1h', '30m', '7d'. */
  ttl: number | string;
  /** `iss`; default governance-ledger. Set to GOVERNANCE_JWT_ISSUER when the service checks one. */
  issuer?: string;
  /** `aud`, when the service checks one (GOVERNANCE_JWT_AUDIENCE). */
  audience?: string;
}

export const TOKEN_ISSUER = 'governance-ledger';

export function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

export async function mintToken({ secret, role, tenant, sub, ttl, issuer = TOKEN_ISSUER, audience }: MintTokenOptions): Promise<string> {
  if (isTenantRole(role) && !tenant) throw new Error(`role ${role} needs a tenant`);
  if (!isTenantRole(role) && tenant) throw new Error(`role ${role} is not bound to a tenant`);
  const claims: Record<string, string> = { role };
  if (tenant) claims.tenant = tenant;
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub ?? `local-${role.toLowerCase()}`)
    .setIssuer(issuer)
    .setIssuedAt(now)
    .setExpirationTime(typeof ttl === 'number' ? now + ttl : ttl);
  if (audience !== undefined) jwt.setAudience(audience);
  return jwt.sign(secretKey(secret));
}
