// POST /v1/integrations/:tenant/:integration: uplinks from a LoRaWAN network server or a webhook. An array of
// N uplinks costs N on the tenant's INTEGRATIONS allowance; over it the route answers 202 and drops the
// message (counted as shed by the Governor), so the integration does not retry into a full allowance.
//
// The credential is checked before the allowance is charged, unlike /v1/ingest: the Governor keeps state of
// its own for every tenant name it meters on INTEGRATIONS (an allowance of authenticated senders, without the
// 1024-name bound of HTTP), so only an authenticated tenant may reach it. The edge per-IP limit still comes
// first.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteHandler } from '../server.ts';
import { authorizeSender } from './authorizeSender.ts';
import { answer, answerRateLimited, enterFrontDoor, tenantVerdict, type ClientResolver } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { callerKeyOf } from './ingestRoute.ts';
import { addTenantCors } from './rateLimitHeaders.ts';
import { closeAfterRefusal, declaresTooLarge, readBodyCapped } from './readBody.ts';
import { namesInPath } from './tenantPath.ts';
import { decodeUplinks } from './uplinks.ts';

export const INTEGRATIONS_PREFIX = '/v1/integrations/';

export function createIntegrationsHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;
  const { governor, logger } = deps;

  return async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const entry = enterFrontDoor(req, res, deps, clients, now);
    if (entry === null) return;
    const { requestId, client, atMs } = entry;

    const names = namesInPath(url.pathname, INTEGRATIONS_PREFIX, 2);
    if (names === null) {
      return answer(res, deps, entry, undefined, 404, { error: 'the path must be /v1/integrations/<tenant>/<integration> with valid names' });
    }
    const [tenantId, integration] = names as [string, string];
    addTenantCors(entry.headers);

    const key = req.headers['x-device-key'];
    const credential = typeof key === 'string' && key !== '' ? await deps.findCredential(key) : null;
    const sender = authorizeSender(credential, { route: 'integration', tenantId, integration });
    if (sender.status === 'unauthorized') {
      entry.headers.push('WWW-Authenticate', 'DeviceKey realm="ingest"');
      return answer(res, deps, entry, tenantId, 401, { error: sender.message });
    }

    if (declaresTooLarge(req, maxBodyBytes)) {
      closeAfterRefusal(req, res, entry.headers);
      return answer(res, deps, entry, tenantId, 413, { error: `the body is larger than ${maxBodyBytes} bytes` });
    }
    const read = await readBodyCapped(req, maxBodyBytes);
    if (read.status === 'too-large') {
      closeAfterRefusal(req, res, entry.headers);
      return answer(res, deps, entry, tenantId, 413, { error: `the body is larger than ${maxBodyBytes} bytes` });
    }
    const decoded = decodeUplinks(read.body);
    if (decoded.status === 'invalid') return answer(res, deps, entry, tenantId, 400, { error: decoded.message });
    const uplinks = decoded.uplinks.length;

    const request = governor.admit({
      tenant: tenantId,
      dimension: 'API_REQUESTS',
      units: 1,
      at: atMs,
      callerKey: callerKeyOf(sender.credential, client),
    });
    if (!request.admitted) {
      return answerRateLimited(res, deps, entry, tenantId, tenantVerdict(request, 'requests'));
    }

    const charge = governor.admit({
      tenant: tenantId,
      dimension: 'INGEST',
      allowance: 'INTEGRATIONS',
      units: uplinks,
      at: atMs,
      callerKey: client.limitKey,
    });
    if (!charge.admitted) return answer(res, deps, entry, tenantId, 202, { accepted: 0, dropped: uplinks });

    try {
      await deps.sink.publish({
        tenantId,
        route: 'integration',
        integration,
        credential: { kind: sender.credential.kind, subject: sender.credential.subject },
        requestId,
        receivedAtMs: atMs,
        units: uplinks,
        items: decoded.uplinks,
      });
    } catch (error) {
      logger.error({ err: error, requestId, tenantId }, 'integration sink failed');
      entry.headers.push('Retry-After', '1');
      return answer(res, deps, entry, tenantId, 503, { error: 'the reading pipeline is unavailable; retry' });
    }
    answer(res, deps, entry, tenantId, 202, { accepted: uplinks });
  };
}
