// Who may ask for admissions: a bearer token naming the SERVICE role (enforcement points) or OPERATOR.
// Checking a signature costs more than deciding a batch of admissions, and an enforcement point sends the
// same token with every batch, so a verified token is remembered until it expires (at most 60 s, so a key
// rotation on the JWKS side takes effect within a minute). A token that failed is not remembered: it costs
// the caller a verification each time, never a place in the cache.
import { decodeJwt } from 'jose';
import type { Caller } from '../../control-plane/index.ts';
import { isRefusal, type TokenVerifier } from '../../auth/index.ts';

export type CallerCheck = { status: 'ok'; actor: Caller } | { status: 'unauthenticated' } | { status: 'forbidden'; actor: Caller };

export interface ServiceCallers {
  check(authorization: string | undefined): CallerCheck | Promise<CallerCheck>;
}

const MAX_REMEMBERED_MS = 60_000;
const MAX_REMEMBERED_TOKENS = 1024;

export function createServiceCallers(verify: TokenVerifier, now: () => number = Date.now): ServiceCallers {
  const remembered = new Map<string, { actor: Caller; untilMs: number }>();
  const decide = (actor: Caller | null): CallerCheck => {
    if (actor === null) return { status: 'unauthenticated' };
    return actor.role === 'SERVICE' || actor.role === 'OPERATOR' ? { status: 'ok', actor } : { status: 'forbidden', actor };
  };
  const verifyAndRemember = async (token: string): Promise<CallerCheck> => {
    const checked = await verify(token);
    const actor = isRefusal(checked) ? null : checked;
    if (actor !== null) {
      const expiresMs = (decodeJwt(token).exp ?? 0) * 1000;
      if (remembered.size >= MAX_REMEMBERED_TOKENS) remembered.clear();
      remembered.set(token, { actor, untilMs: Math.min(expiresMs, now() + MAX_REMEMBERED_MS) });
    }
    return decide(actor);
  };
  return {
    check(authorization) {
      const token = bearerToken(authorization);
      if (token === null) return { status: 'unauthenticated' };
      const known = remembered.get(token);
      if (known !== undefined) {
        if (known.untilMs > now()) return decide(known.actor);
        remembered.delete(token);
      }
      return verifyAndRemember(token);
    },
  };
}

function bearerToken(authorization: string | undefined): string | null {
  if (authorization === undefined || authorization.length < 8) return null;
  if (authorization.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  const token = authorization.slice(7).trim();
  return token === '' || /\s/.test(token) ? null : token;
}
