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
import { addTenantCors } from '../../http-server/rateLimitHeaders.ts';
import { declaresTooLarge, readBodyCapped } from '../../http-server/readBody.ts';
import { addDecidedQuota, answer, answerNeverFits, answerRateLimited, answerSinkOutcome, answerTooLarge, answerUnauthorized, edgeVerdict, tenantVerdict } from './answers.ts';
import { frontDoorRequest, type ClientResolver } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { namesInPath } from './tenantPath.ts';
import { decodeUplinks } from './uplinks.ts';
import { bodyCapOf, chargeApiRequest, checkCredential, checkEdge, handToSink, holdReadingsCharge, type AcceptedBatch } from '../pipeline/index.ts';
import { HeldCharge, type ChargeOutcome } from '../../governance/index.ts';

export const INTEGRATIONS_PREFIX = '/v1/integrations/';
const INTEGRATIONS_PATH_HELP = 'the path must be /v1/integrations/<tenant>/<integration> with valid names';

export function createIntegrationsHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;

  return async (req: IncomingMessage, res: ServerResponse, target: RequestTarget) => {
    const entry = frontDoorRequest(req, clients, now);
    const { requestId, client, atMs } = entry;
    // The edge per-IP limit, on the client address (trusted proxies' X-Forwarded-For believed).
    const edge = checkEdge(deps, client.limitKey, atMs);
    if (!edge.admitted) return answerRateLimited(res, deps, entry, undefined, edgeVerdict(edge));
    // The tenant and the integration from the path; the answers may be read by a browser (CORS) from here on.
    const names = namesInPath(target.pathname, INTEGRATIONS_PREFIX, 2);
    if (names === null) return answer(res, deps, entry, undefined, 404, { error: INTEGRATIONS_PATH_HELP });
    addTenantCors(entry.headers);
    const [tenantId, integration] = names as [string, string];

    // The credential (X-Device-Key): a tenant key, or this integration's.
    const key = req.headers['x-device-key'];
    const checked = checkCredential(deps, typeof key === 'string' ? key : undefined, { route: 'integration', tenantId, integration });
    const sender = checked instanceof Promise ? await checked : checked;
    if (sender.status === 'unauthorized') return answerUnauthorized(res, deps, entry, tenantId, sender.message);
    const credential = sender.credential;

    // The size cap: a declared length over it is refused before a byte is read, a chunked one as soon as it
    // passes it. Then decode.
    const capBytes = bodyCapOf(deps, maxBodyBytes);
    const read = declaresTooLarge(req, capBytes) ? undefined : await readBodyCapped(req, capBytes);
    if (read?.status !== 'read') return answerTooLarge(req, res, deps, entry, tenantId, capBytes);
    const decoded = decodeUplinks(read.body);
    if (decoded.status === 'invalid') return answer(res, deps, entry, tenantId, 400, { error: decoded.message });
    const uplinks = decoded.uplinks.length;

    // API_REQUESTS, one per request, with the tenant's policy.
    const request = chargeApiRequest(deps, { tenantId, atMs, clientKey: client.limitKey }, credential);
    if (!request.admitted) return answerRateLimited(res, deps, entry, tenantId, tenantVerdict(request, 'requests'));

    // The uplinks on INTEGRATIONS, held until the sink took them: a 503 withdraws the charge uncounted (the
    // retry is counted).
    const charge = new HeldCharge();
    const decision = holdReadingsCharge(deps, { tenantId, allowance: 'INTEGRATIONS', atMs, clientKey: client.limitKey }, uplinks, charge);
    // More uplinks than the allowance ever holds would be dropped on every try: say so (413) instead.
    if (!decision.admitted && decision.neverFits) return answerNeverFits(res, deps, entry, tenantId, decision, uplinks, 'uplinks');
    // The RateLimit fields of the 202, whether the uplinks are taken or dropped (the integration learns how much
    // room is left either way), written now while the decision record is this charge's (a 503 from the sink
    // carries them too: they say what the charge left).
    addDecidedQuota(entry, decision, 'uplinks');
    if (!decision.admitted) return answer(res, deps, entry, tenantId, 202, { accepted: 0, dropped: uplinks });

    // The sink: 202 when it took them, 413 or 400 when it refused them for their content, 503 when it failed.
    let outcome: ChargeOutcome = 'withdrawn';
    try {
      const batch: AcceptedBatch = {
        tenantId,
        route: 'integration',
        integration,
        credential: { kind: credential.kind, subject: credential.subject },
        requestId,
        receivedAtMs: atMs,
        units: uplinks,
        items: decoded.uplinks,
      };
      outcome = answerSinkOutcome(res, deps, entry, batch, await handToSink(deps, batch));
    } finally {
      charge.settle(outcome);
    }
  };
}
