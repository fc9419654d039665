// POST /v1/ingest/:tenant, in the spec's order:
//   1. edge per-IP limit (frontDoor.ts);
//   2. the tenant name from the path on the HTTP allowance (the Governor's confirmed / 1024 / overflow rule)
//   3. charged once per message before decoding, then the size cap (413 without reading the body whole);
//   4. decode (400 with what is wrong), then the readings are charged;
//   5. the device credential, only now (401);
//   then API_REQUESTS (see below), and 6. the sink (202).
//
// API_REQUESTS is charged once per request, after the credential: it is a per-tenant limit with the tenant's
// own policy (EXACT_REJECT or STABLE_DOWNSAMPLE), and the Governor keeps state of its own for every name it
// meters outside the HTTP allowance, so charging it before authentication would let invented names grow
// that state without bound. OpenRUM also charges its project limit after the DSN check.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteHandler } from '../server.ts';
import { authorizeSender } from './authorizeSender.ts';
import type { IngestCredential } from './credentials.ts';
import type { ClientIp } from './clientIp.ts';
import { answer, answerRateLimited, enterFrontDoor, tenantVerdict, type ClientResolver } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { addTenantCors } from './rateLimitHeaders.ts';
import { closeAfterRefusal, declaresTooLarge, readBodyCapped } from './readBody.ts';
import { decodeReadings } from './readings.ts';
import { namesInPath } from './tenantPath.ts';

export const INGEST_PREFIX = '/v1/ingest/';

export function createIngestHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;
  const { governor, logger } = deps;

  return async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const entry = enterFrontDoor(req, res, deps, clients, now);
    if (entry === null) return;
    const { requestId, client, atMs } = entry;

    const names = namesInPath(url.pathname, INGEST_PREFIX, 1);
    if (names === null) return answer(res, deps, entry, undefined, 404, { error: 'the path must be /v1/ingest/<tenant> with a valid tenant ID' });
    const tenantId = names[0]!;
    addTenantCors(entry.headers);

    const message = governor.admit({
      tenant: tenantId,
      dimension: 'INGEST',
      allowance: 'HTTP',
      units: 1,
      at: atMs,
      callerKey: client.limitKey,
      charge: 'message',
    });
    if (!message.admitted) {
      return answerRateLimited(res, deps, entry, tenantId, tenantVerdict(message, 'messages'));
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
    const decoded = decodeReadings(read.body);
    if (decoded.status === 'invalid') return answer(res, deps, entry, tenantId, 400, { error: decoded.message });

    const readings = governor.admit({
      tenant: tenantId,
      dimension: 'INGEST',
      allowance: 'HTTP',
      units: decoded.readingCount,
      at: atMs,
      callerKey: client.limitKey,
    });
    if (!readings.admitted) {
      return answerRateLimited(res, deps, entry, tenantId, tenantVerdict(readings, 'readings'));
    }

    const key = req.headers['x-device-key'];
    const credential = typeof key === 'string' && key !== '' ? await deps.findCredential(key) : null;
    const sender = authorizeSender(credential, { route: 'http', tenantId, entries: decoded.entries });
    if (sender.status === 'unauthorized') {
      entry.headers.push('WWW-Authenticate', 'DeviceKey realm="ingest"');
      return answer(res, deps, entry, tenantId, 401, { error: sender.message });
    }

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

    try {
      await deps.sink.publish({
        tenantId,
        route: 'http',
        credential: { kind: sender.credential.kind, subject: sender.credential.subject },
        requestId,
        receivedAtMs: atMs,
        units: decoded.readingCount,
        items: decoded.entries,
      });
    } catch (error) {
      logger.error({ err: error, requestId, tenantId }, 'ingest sink failed');
      entry.headers.push('Retry-After', '1');
      return answer(res, deps, entry, tenantId, 503, { error: 'the reading pipeline is unavailable; retry' });
    }
    answer(res, deps, entry, tenantId, 202, { accepted: decoded.readingCount });
  };
}

/**
 * Who STABLE_DOWNSAMPLE keeps or drops as a whole: the device or integration a key belongs to, or, for a
 * tenant-wide key that many devices share, the client address.
 */
export function callerKeyOf(credential: IngestCredential, client: ClientIp): string {
  return credential.subject !== null ? `${credential.kind}:${credential.subject}` : `ip:${client.limitKey}`;
}
