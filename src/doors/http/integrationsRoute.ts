// POST /v1/integrations/:tenant/:integration: uplinks from a LoRaWAN network server or a webhook. An array of
// N uplinks costs N on the tenant's INTEGRATIONS allowance; over it the route answers 202 and drops the
// message (counted as shed by the Governor), so the integration does not retry into a full allowance.
//
// The credential is checked before the allowance is charged, unlike /v1/ingest: the Governor keeps state of
// its own for every tenant name it meters on INTEGRATIONS (an allowance of authenticated senders, without the
// 1024-name bound of HTTP), so only an authenticated tenant may reach it. The edge per-IP limit still comes
// first.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestTarget, RouteHandler } from '../../http-server/route.ts';
import { addDecidedQuota, answer, enterTenantPath, type ClientResolver } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { admitApiRequest, answerNeverFits, authorizedCredential, publishAccepted, readBodyWithinCap } from './ingestSteps.ts';
import { decodeUplinks } from './uplinks.ts';
import { bodyCapOf, holdReadingsCharge } from '../pipeline/index.ts';
import { HeldCharge, type ChargeOutcome } from '../../governance/index.ts';

export const INTEGRATIONS_PREFIX = '/v1/integrations/';
const INTEGRATIONS_PATH = { prefix: INTEGRATIONS_PREFIX, count: 2, help: 'the path must be /v1/integrations/<tenant>/<integration> with valid names' };

export function createIntegrationsHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;

  return async (req: IncomingMessage, res: ServerResponse, target: RequestTarget) => {
    const entered = enterTenantPath(req, res, target, deps, clients, now, INTEGRATIONS_PATH);
    if (entered === null) return;
    const { entry, names } = entered;
    const { requestId, client, atMs } = entry;
    const [tenantId, integration] = names as [string, string];

    const checked = authorizedCredential(req, res, deps, entry, { route: 'integration', tenantId, integration });
    const credential = checked instanceof Promise ? await checked : checked;
    if (credential === null) return;

    const body = await readBodyWithinCap(req, res, deps, entry, tenantId, bodyCapOf(deps, maxBodyBytes));
    if (body === null) return;
    const decoded = decodeUplinks(body);
    if (decoded.status === 'invalid') return answer(res, deps, entry, tenantId, 400, { error: decoded.message });
    const uplinks = decoded.uplinks.length;

    if (!admitApiRequest(res, deps, entry, tenantId, credential)) return;

    // Held until the sink took the uplinks: a 503 withdraws the charge uncounted (the retry is counted).
    const charge = new HeldCharge();
    const decision = holdReadingsCharge(deps, { tenantId, allowance: 'INTEGRATIONS', atMs, clientKey: client.limitKey }, uplinks, charge);
    // More uplinks than the allowance ever holds would be dropped on every try: say so (413) instead.
    if (!decision.admitted && decision.neverFits) return answerNeverFits(res, deps, entry, tenantId, decision, uplinks, 'uplinks');
    // The RateLimit fields of the 202, whether the uplinks are taken or dropped (the integration learns how much
    // room is left either way), written now while the decision record is this charge's (a 503 from the sink
    // carries them too: they say what the charge left).
    addDecidedQuota(entry, decision, 'uplinks');
    if (!decision.admitted) return answer(res, deps, entry, tenantId, 202, { accepted: 0, dropped: uplinks });

    let outcome: ChargeOutcome = 'withdrawn';
    try {
      outcome = await publishAccepted(res, deps, entry, {
        tenantId,
        route: 'integration',
        integration,
        credential: { kind: credential.kind, subject: credential.subject },
        requestId,
        receivedAtMs: atMs,
        units: uplinks,
        items: decoded.uplinks,
      });
    } finally {
      charge.settle(outcome);
    }
  };
}
